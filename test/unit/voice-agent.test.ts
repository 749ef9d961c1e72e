import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { MessageItem } from '../../src/session/conversation.ts';
import type { Session } from '../../src/session/session.ts';
import type { VoiceStages } from '../../src/agent/stages.ts';
import type { RecognitionStream } from '../../src/agent/stt/types.ts';
import { fakeContext, fakeSpeaker, scriptedModel, settle } from '../helpers/agentFakes.ts';
import type { TurnListener } from '../../src/agent/turn/types.ts';
import { VoiceAgent } from '../../src/agent/voiceAgent.ts';

/** Stages the test drives: it says when the caller speaks and what the recogniser heard. */
function fakeStages(transcripts: string[]) {
  let listener: TurnListener | undefined;
  const recognitions: { written: number; aborted: boolean; partial: (text: string) => void }[] = [];
  const stages: VoiceStages = {
    turnDetector: (_options, l) => {
      listener = l;
      return { push: () => {}, configure: () => {}, reset: () => {}, close: () => {} };
    },
    noiseSuppressor: () => {
      throw new Error('not in these tests');
    },
    recognizer: {
      name: 'fake',
      start(): RecognitionStream {
        const r = { written: 0, aborted: false, partial: (_text: string) => {} };
        recognitions.push(r);
        let finish: (t: string) => void = () => {};
        const text = new Promise<string>((resolve) => (finish = resolve));
        return {
          write: (pcm) => void (r.written += pcm.length),
          onPartial: (cb) => void (r.partial = cb),
          finish: () => (finish(transcripts.shift() ?? ''), text),
          abort: () => void (r.aborted = true),
        };
      },
      health: () => ({ state: 'ready' }),
      close: async () => {},
    },
    speaker: fakeSpeaker(1000),
    health: () => ({}),
    close: async () => {},
  };
  return { stages, caller: () => listener!, recognitions };
}

function agent(transcripts: string[], session: Partial<Session> = {}, replyText = 'Fine, thanks. ', prepareReplyAfterMs = 0) {
  const f = fakeContext({ transcribeInput: true, ...session });
  const s = fakeStages(transcripts);
  const model = scriptedModel([{ type: 'text', delta: replyText }]);
  const a = new VoiceAgent(f.ctx, { stages: s.stages, modelFor: () => model, prepareReplyAfterMs });
  const speakTurn = (start: number, end: number) => {
    s.caller().speechStarted(start, new Int16Array(160));
    s.caller().speech(new Int16Array(320));
    s.caller().speechStopped(end, end);
  };
  return { ...f, ...s, a, model, speakTurn };
}

describe('VoiceAgent', () => {
  test('a spoken turn becomes a user item with its transcript and is answered', async () => {
    const t = agent(['how are you']);
    t.speakTurn(1000, 2000);
    await settle(() => t.types().includes('response.done'), 'the reply');
    const types: string[] = t.types();
    for (const [a, b] of [['input.speech_started', 'input.speech_stopped'], ['input.committed', 'transcription.completed'], ['transcription.completed', 'response.created']]) {
      assert.ok(types.indexOf(a!) < types.indexOf(b!), `${a} before ${b}: ${types.join(', ')}`);
    }
    const user = t.conversation.items[0] as MessageItem;
    assert.deepEqual(user.content, [{ type: 'input_audio', transcript: 'how are you' }]);
    assert.deepEqual(t.model.requests[0]!.messages, [{ role: 'user', content: 'how are you' }]);
    assert.equal(t.recognitions[0]!.written, 160 + 320, 'preroll and speech reach the recogniser');
    t.audio.play();
    assert.ok(t.types().includes('output_audio.stopped'));
    assert.deepEqual(t.turns, [{ role: 'user', text: 'how are you' }, { role: 'assistant', text: 'Fine, thanks.' }]);
  });

  test('barge-in: speaking over the reply stops it and clears its audio; the history keeps what was heard', async () => {
    const t = agent(['tell me something', 'stop'], {}, 'one two three four ');
    t.speakTurn(0, 1000);
    await settle(() => t.types().includes('response.done'), 'the reply');
    t.audio.play(500);
    t.caller().speechStarted(3000, new Int16Array(0));
    const interrupted = t.events.find((e) => e.type === 'response.interrupted');
    assert.ok(interrupted && interrupted.type === 'response.interrupted' && interrupted.droppedAudioMs === 500);
    assert.ok(t.types().includes('output_audio.cleared'));
    assert.equal(t.audio.queuedMs, 0);
    const reply = t.conversation.items[1] as MessageItem;
    assert.deepEqual(reply.content, [{ type: 'output_audio', transcript: 'one two' }]);
  });

  test('with interrupt_response off, speaking does not stop the reply; with create_response off, turns are not answered', async () => {
    const t = agent(['hello'], { turnDetection: { type: 'server_vad', threshold: 0.5, prefixPaddingMs: 300, silenceMs: 500, idleTimeoutMs: null, createResponse: false, interruptResponse: false } });
    t.speakTurn(0, 1000);
    await settle(() => t.types().includes('transcription.completed'), 'the transcript');
    await new Promise((r) => setImmediate(r));
    assert.ok(!t.types().includes('response.created'));
    assert.equal(t.a.createResponse().ok, true, 'the client asks for the reply');
    await settle(() => t.types().includes('response.done'), 'the reply');
    t.caller().speechStarted(3000, new Int16Array(0));
    assert.ok(!t.types().includes('response.interrupted'));
    assert.equal(t.audio.queuedMs, 1000);
  });

  test('a caller who goes on speaking while the turn is transcribed is answered once, for both parts', async () => {
    const t = agent(['my name is', 'Alice']);
    t.caller().speechStarted(0, new Int16Array(0));
    t.caller().speechStopped(1000, 1000);
    t.caller().speechStarted(1200, new Int16Array(0));
    await settle(() => t.types().includes('transcription.completed'), 'first part');
    t.caller().speechStopped(2000, 2000);
    await settle(() => t.types().includes('response.done'), 'the reply');
    assert.equal(t.model.requests.length, 1);
    assert.deepEqual(t.model.requests[0]!.messages, [{ role: 'user', content: 'my name is' }, { role: 'user', content: 'Alice' }]);
  });

  test('noise the recogniser heard as nothing leaves no item and no reply', async () => {
    const t = agent(['']);
    t.speakTurn(0, 500);
    await settle(() => t.types().includes('item.deleted'), 'the empty item removed');
    assert.equal(t.conversation.items.length, 0);
    assert.ok(!t.types().includes('response.created'));
  });

  test('push-to-talk: a reply asked for right after the commit answers the committed words; no speech_stopped without turn detection', async () => {
    const t = agent(['what time is it'], { turnDetection: { ...fakeContext().ctx.session().turnDetection, type: 'none', createResponse: false } });
    t.a.onAudio(new Int16Array(320));
    assert.equal(t.a.commitInput().ok, true);
    assert.equal(t.a.createResponse().ok, true);
    await settle(() => t.types().includes('response.done'), 'the reply');
    const types: string[] = t.types();
    assert.ok(!types.includes('input.speech_stopped') && !types.includes('input.speech_started'), types.join(', '));
    assert.ok(types.indexOf('transcription.completed') < types.indexOf('response.done'));
    const asked = t.model.requests[0]!.messages;
    assert.deepEqual(asked.at(-1), { role: 'user', content: 'what time is it' }, 'the model saw the words');
  });

  test('input transcription deltas append: each part as recognised at a pause, the rest at the end; partial guesses never; their concatenation is the completed transcript', async () => {
    const t = agent(['hello what time', 'is it right now']);
    t.caller().speechStarted(0, new Int16Array(160));
    // A recogniser's partial guesses are revised: none is sent.
    for (const p of ['hell', 'hello', 'hello what ti']) t.recognitions.at(-1)!.partial(p);
    t.caller().speechPaused!(500);
    await settle(() => t.types().includes('transcription.delta'), 'the first part');
    t.caller().speechResumed!();
    t.recognitions.at(-1)!.partial('is it');
    t.caller().speechStopped(1000, 1000);
    await settle(() => t.types().includes('transcription.completed'), 'the transcript');
    const deltas = t.events.filter((e) => e.type === 'transcription.delta').map((e) => (e as { delta: string }).delta);
    const completed = t.events.find((e) => e.type === 'transcription.completed') as { transcript: string };
    assert.deepEqual(deltas, ['hello what time', ' is it right now']);
    assert.equal(deltas.join(''), completed.transcript);
  });

  test('audio inside a user item is transcribed into it, and a reply asked for meanwhile answers it', async () => {
    const t = agent(['what day is it']);
    const item: MessageItem = { id: 'item_audio', type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_audio', transcript: null }] };
    t.conversation.add(item);
    t.a.transcribeItem(item.id, new Int16Array(16_000));
    assert.equal(t.a.createResponse().ok, true);
    await settle(() => t.types().includes('response.done'), 'the reply');
    assert.equal((item.content[0] as { transcript: string }).transcript, 'what day is it');
    assert.ok(t.recognitions.at(-1)!.written === 16_000);
    assert.deepEqual(t.model.requests[0]!.messages.at(-1), { role: 'user', content: 'what day is it' });
    assert.ok(t.types().includes('transcription.completed'));
  });

  test('a second reply asked for while one is generated is refused', () => {
    const t = agent([]);
    assert.equal(t.a.createResponse().ok, true);
    const refused = t.a.createResponse();
    assert.ok(!refused.ok && refused.code === 'conversation_already_has_active_response');
  });

  test('a reply prepared during a pause is unseen until the turn ends, then plays at once', async () => {
    const t = agent(['what time is it'], {}, 'It is noon. ', 100);
    t.caller().speechStarted(0, new Int16Array(0));
    t.caller().speech(new Int16Array(320));
    t.caller().speechPaused!(900);
    await settle(() => t.model.requests.length === 1, 'the reply prepared');
    await new Promise((r) => setImmediate(r));
    const types: string[] = t.types();
    assert.ok(!types.some((x) => x.startsWith('response.') || x.startsWith('output_audio')), `nothing of it seen: ${types.join(', ')}`);
    assert.equal(t.audio.writtenMs, 0);
    assert.deepEqual(t.model.requests[0]!.messages, [{ role: 'user', content: 'what time is it' }]);
    t.caller().speechStopped(1200, 900);
    await settle(() => t.types().includes('response.done'), 'the reply released');
    const after: string[] = t.types();
    assert.ok(after.indexOf('transcription.completed') < after.indexOf('response.created'), 'the user turn comes first');
    assert.equal(t.model.requests.length, 1, 'the prepared reply is the reply');
    assert.equal(t.audio.writtenMs, 1000);
    assert.deepEqual(t.conversation.items.map((i) => i.type === 'message' && i.role), ['user', 'assistant']);
  });

  test('a caller who goes on after a pause: the prepared reply is dropped unseen, and the whole turn is answered', async () => {
    const t = agent(['my name is', 'Alice'], {}, 'Hello. ', 100);
    t.caller().speechStarted(0, new Int16Array(0));
    t.caller().speechPaused!(800);
    await settle(() => t.model.requests.length === 1, 'a reply prepared for the first part');
    t.caller().speechResumed!();
    t.caller().speech(new Int16Array(320));
    t.caller().speechStopped(2000, 1700);
    await settle(() => t.types().includes('response.done'), 'the reply');
    assert.equal(t.model.requests.length, 2);
    assert.deepEqual(t.model.requests[1]!.messages, [{ role: 'user', content: 'my name is Alice' }]);
    assert.equal(t.types().filter((x) => x === 'response.created').length, 1, 'the dropped reply was never seen');
    assert.equal(t.recognitions.length, 2, 'the part after the pause had a recognition of its own');
  });
  test('noise_reduction: the recogniser hears the turns suppressed; session.update changes or stops the suppressor; one that cannot start is a recoverable failure', async () => {
    const f = fakeContext({ noiseReduction: 'near_field' });
    const s = fakeStages(['hello']);
    const made: { type: string; processed: number; closed: boolean }[] = [];
    s.stages.noiseSuppressor = (type) => {
      const m = { type: type as string, processed: 0, closed: false };
      made.push(m);
      return { type, process: (pcm) => ((m.processed += pcm.length), pcm), close: () => void (m.closed = true) };
    };
    const a = new VoiceAgent(f.ctx, { stages: s.stages, modelFor: () => scriptedModel([]) });
    assert.deepEqual(made.map((m) => m.type), ['near_field']);
    for (let i = 0; i < 100; i++) a.onAudio(new Int16Array(320));
    assert.equal(made[0]!.processed, 0, 'outside a turn the suppressor does not run');
    // A turn whose audio starts 1.7 s into the call: the second before it warms the suppressor up, unheard.
    s.caller().speechStarted(1700, new Int16Array(160));
    s.caller().speech(new Int16Array(320));
    assert.equal(made[0]!.processed, 16_000 + 480, "the warm-up, then the turn's prefix padding and speech");
    assert.equal(s.recognitions[0]!.written, 480);
    a.onSessionUpdate({ ...f.session, noiseReduction: 'far_field' });
    assert.deepEqual(made.map((m) => [m.type, m.closed]), [['near_field', true], ['far_field', false]]);
    a.onSessionUpdate({ ...f.session, noiseReduction: null });
    assert.deepEqual(made.map((m) => m.closed), [true, true]);
    s.stages.noiseSuppressor = () => {
      throw new Error('no WebAssembly here');
    };
    a.onSessionUpdate({ ...f.session, noiseReduction: 'near_field' });
    const failed = f.events.find((e) => e.type === 'stage.failed');
    assert.deepEqual(failed && [failed.stage, failed.code, failed.recoverable], ['noise_reduction', 'noise_reduction_failed', true]);
    a.close();
  });
});
