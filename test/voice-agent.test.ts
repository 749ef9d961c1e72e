// The voice agent behind a call: offline speech in, reply, speech out; barge-in; every voice;
// an OpenAI-compatible model server; history and resume. All through real calls.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { inboundAudio, listen, openCall, outboundAudioPackets, type RtcClient } from './helpers/rtcClient.ts';
import { startModelBackends, type ModelBackends } from './helpers/modelBackends.ts';
import { http, mintToken, startServer, type RunningServer } from './helpers/server.ts';
import { attachMicrophone, speak } from './helpers/speech.ts';
import { until } from './helpers/wait.ts';

/** Resolves once the client's microphone has sent `ms` of audio (its leading silence reached the server's VAD). */
async function micFlowing(client: RtcClient, ms: number): Promise<void> {
  await until('the microphone to send', () => outboundAudioPackets(client), (n) => n >= ms / 20);
}

async function call(server: RunningServer, params: Record<string, unknown>): Promise<RtcClient> {
  const token = await mintToken(server.baseUrl, server.devKey);
  const client = await openCall(server.baseUrl, token, { params });
  await client.waitConnected();
  await client.nextEvent('session.created');
  return client;
}

function typed(client: RtcClient, text: string) {
  client.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text }] } });
}

/** Events of a type received after index `from`; on a timeout, the error names the events that did come. */
function nextAfter(client: RtcClient, type: string, from: number, timeoutMs = 15_000) {
  return until(`${type} after event #${from}`, () => client.events.slice(from).find((x) => x.type === type), (e) => e !== undefined, timeoutMs).catch((err: Error) => {
    throw new Error(`${err.message}; the events since: ${client.events.slice(from).map((e) => e.type).join(', ') || 'none'}`);
  });
}

describe('offline pipeline', () => {
  let server: RunningServer;
  before(async () => {
    // The catalogue test asks for 63 replies in a few seconds on purpose, past the per-call reply rate.
    server = await startServer({ CALL_REPLIES_PER_SECOND: '100' });
  });
  after(async () => {
    await server.stop();
  });

  test('spoken question, echo model: transcript, matching reply text, and reply audio', async () => {
    const client = await call(server, { model: 'echo', return_transcription: true, voice: 'Victoria' });
    try {
      const mic = await attachMicrophone(client);
      const ear = listen(client);
      await micFlowing(client, 500);
      await mic.say(speak('what time is it'));
      const heard = await client.nextEvent('conversation.item.input_audio_transcription.completed', 15_000);
      assert.match(heard.transcript, /\btime\b/);
      const done = await client.nextEvent('response.output_item.done');
      assert.equal(done.text, heard.transcript, 'echo repeats the words it heard');
      await client.nextEvent('response.audio.started');
      const types = client.events.map((e) => e.type);
      assert.ok(types.indexOf('input_audio_buffer.speech_started') < types.indexOf('input_audio_buffer.speech_stopped'));
      await client.nextEvent('response.audio.done', 15_000);
      assert.ok(ear.peakRms() > 500, `reply audio is not silent (rms ${ear.peakRms()})`);
      assert.ok((await inboundAudio(client)).packetsReceived > 20);
      mic.stop();
      ear.stop();
    } finally {
      client.close();
    }
  });

  test('spoken question, default model (parley-offline): a real answer; no transcript event unless asked', async () => {
    const client = await call(server, {});
    try {
      const mic = await attachMicrophone(client);
      await micFlowing(client, 500);
      await mic.say(speak('what time is it'));
      const done = await client.nextEvent('response.output_item.done', 20_000);
      assert.match(done.text, /^It is \d{1,2}:\d\d/);
      assert.ok(!client.events.some((e) => e.type === 'conversation.item.input_audio_transcription.completed'));
      assert.ok(client.events.some((e) => e.type === 'response.text.delta'));
      mic.stop();
    } finally {
      client.close();
    }
  });

  test('modalities [] (what the published React SDK sends once the channel opens): the caller is still heard', async () => {
    const client = await call(server, { return_transcription: true, modalities: [] });
    try {
      const from = client.events.length;
      client.send({ event: 'session.update', data: { model: 'orga-1-beta', voice: 'alloy', temperature: 0.5, modalities: [] } });
      const updated = await nextAfter(client, 'session.updated', from);
      assert.deepEqual(updated.session.modalities, []);
      const mic = await attachMicrophone(client);
      await mic.say(speak('what time is it'));
      const heard = await client.nextEvent('conversation.item.input_audio_transcription.completed', 15_000);
      assert.match(heard.transcript, /\btime\b/);
      assert.match((await client.nextEvent('response.output_item.done', 20_000)).text, /^It is \d{1,2}:\d\d/, 'orga-1-beta answered');
      mic.stop();
    } finally {
      client.close();
    }
  });

  test('barge-in: speaking over the agent stops its audio and sends response.interrupted', async () => {
    const client = await call(server, { model: 'echo' });
    try {
      const mic = await attachMicrophone(client);
      await micFlowing(client, 300);
      typed(client, 'This is a long answer that the agent will be reading aloud for quite a while. ' + 'It keeps going with more and more words so that there is time to interrupt it. '.repeat(4));
      await client.nextEvent('response.audio.started');
      // The caller hears 800 ms of the reply before speaking over it.
      const before = (await inboundAudio(client)).packetsReceived;
      await until('800 ms of the reply to arrive', async () => (await inboundAudio(client)).packetsReceived, (n) => n >= before + 40);
      await mic.say(speak('stop please'));
      const interrupted = await client.nextEvent('response.interrupted', 10_000);
      assert.ok(interrupted.dropped_audio_ms > 1000, 'unsent reply audio was dropped');
      // The reply's audio stops: from the interruption until the next reply (the echo of "stop
      // please", after the caller's turn ends) or 1.5 s, only what was in flight arrives — the reply
      // had seconds of audio left, 50 packets a second (the bound itself is measured in bench/).
      const atInterruption = (await inboundAudio(client)).packetsReceived;
      await nextAfter(client, 'response.audio.started', client.events.indexOf(interrupted) + 1, 1500).catch(() => undefined);
      const inWindow = (await inboundAudio(client)).packetsReceived - atInterruption;
      assert.ok(inWindow < 20, `audio stopped after the interruption (${inWindow} packets arrived)`);
      mic.stop();
    } finally {
      client.close();
    }
  });

  test('every catalogue voice speaks', async () => {
    const voices = (await http(server.baseUrl, '/v1/realtime/voices', { token: server.devKey })).body.voices as { name: string }[];
    assert.equal(voices.length, 63, 'the newer clients\' 50 and the published release\'s 10 plus OpenAI\'s other 3');
    // Three calls share the voices, so that one synthesises while another waits for its events.
    const CALLS = 3;
    await Promise.all(
      Array.from({ length: CALLS }, async (_, c) => {
        const client = await call(server, { model: 'echo' });
        try {
          for (const { name } of voices.filter((_, i) => i % CALLS === c)) {
            const from = client.events.length;
            client.send({ type: 'session.update', session: { voice: name } });
            await nextAfter(client, 'session.updated', from);
            typed(client, 'Hello.');
            await nextAfter(client, 'response.audio.started', from);
            // Its audio exists; no need to listen to all of it.
            client.send({ type: 'response.cancel' });
            await nextAfter(client, 'response.cancelled', from);
          }
        } finally {
          client.close();
        }
      }),
    );
  });

  test('a session.update to a model another agent runs keeps everything said in the call', async () => {
    const client = await call(server, { model: 'parley-offline' });
    try {
      typed(client, 'My name is Alice.');
      assert.match((await client.nextEvent('response.output_item.done')).text, /Alice/);
      // To the audio-echo agent and back: each switch replaces the agent behind the call.
      for (const model of ['audio-echo', 'parley-offline']) {
        const from = client.events.length;
        client.send({ event: 'session.update', data: { model } });
        assert.equal((await nextAfter(client, 'session.updated', from)).session.model, model);
      }
      const from = client.events.length;
      typed(client, 'What is my name?');
      assert.equal((await nextAfter(client, 'response.output_item.done', from)).text, 'Your name is Alice.');
    } finally {
      client.close();
    }
  });

  test('history and resume: a second call resuming the first sees its turns', async () => {
    const first = await call(server, { history: true });
    typed(first, 'My name is Alice.');
    assert.match((await first.nextEvent('response.output_item.done')).text, /Alice/);
    first.send({ type: 'session.end' });
    await first.nextEvent('session.ended');
    first.close();

    const second = await call(server, { history: true, conversation_id: first.conversationId });
    try {
      typed(second, 'What is my name?');
      assert.equal((await second.nextEvent('response.output_item.done')).text, 'Your name is Alice.');
    } finally {
      second.close();
    }
    const transcript = await until(
      "the second call's turns to be recorded",
      async () => (await http(server.baseUrl, `/v1/realtime/conversations/${second.conversationId}`, { token: server.devKey })).body,
      (t) => t.items?.length >= 4,
    );
    assert.deepEqual(transcript.items.map((i: any) => [i.role, i.text]), [
      ['user', 'My name is Alice.'],
      ['assistant', 'Nice to meet you, Alice. How can I help?'],
      ['user', 'What is my name?'],
      ['assistant', 'Your name is Alice.'],
    ]);
    const other = (await server.cli('keys', 'create', '--name', 'stranger')).stdout;
    const strangerToken = await mintToken(server.baseUrl, /key:\s+(sk_parley_ai_\w+)/.exec(other)![1]!);
    await assert.rejects(openCall(server.baseUrl, strangerToken, { params: { conversation_id: first.conversationId } }), (err: any) => {
      assert.equal(err.status, 422);
      assert.deepEqual(err.body.detail[0].loc, ['body', 'params', 'conversation_id']);
      return true;
    });
  });
});

describe('OpenAI-compatible model server', () => {
  let llm: ModelBackends;
  let server: RunningServer;
  let behaviour: 'ok' | 'fail' | 'hang' = 'ok';

  before(async () => {
    llm = await startModelBackends({
      replyPieces: ['Hello ', 'from the ', 'language model. ', 'Second sentence.'],
      intercept: (_req, res) => {
        if (behaviour === 'fail') res.writeHead(500).end('{"error":"boom"}');
        // 'hang' never answers
        return behaviour !== 'ok';
      },
    });
    server = await startServer({ LLM_BASE_URL: llm.baseUrl, LLM_API_KEY: 'llm-secret-key', LLM_MODEL: 'tiny-model', LLM_TIMEOUT_MS: '1500' });
  });
  after(async () => {
    await server.stop();
    await llm.close();
  });

  test('instructions, temperature and history reach the model; the streamed reply is spoken', async () => {
    const models = (await http(server.baseUrl, '/v1/realtime/models', { token: server.devKey })).body;
    assert.equal(models.models.find((m: any) => m.id === 'orga-1-beta').runs, 'parley-cascade');
    const client = await call(server, { instructions: 'You are Marvin.', temperature: 0.3 });
    try {
      typed(client, 'First question');
      assert.equal((await client.nextEvent('response.output_item.done')).text, 'Hello from the language model. Second sentence.');
      // Heard to the end (a reply interrupted keeps only what was heard: see the OpenAI client tests).
      await client.nextEvent('response.audio.done', 15_000);
      const from = client.events.length;
      typed(client, 'Second question');
      await nextAfter(client, 'response.output_item.done', from);
      const request = llm.requests.at(-1)!;
      const last = { path: request.path, auth: request.auth, body: JSON.parse(request.body.toString()) };
      assert.equal(last.path, '/v1/chat/completions');
      assert.equal(last.auth, 'Bearer llm-secret-key');
      assert.equal(last.body.model, 'tiny-model');
      assert.equal(last.body.temperature, 0.3);
      assert.equal(last.body.stream, true);
      assert.deepEqual(last.body.messages, [
        { role: 'system', content: 'You are Marvin.' },
        { role: 'user', content: 'First question' },
        { role: 'assistant', content: 'Hello from the language model. Second sentence.' },
        { role: 'user', content: 'Second question' },
      ]);
      assert.ok(!server.stderr().includes('llm-secret-key'), 'the model key is not logged');
    } finally {
      client.close();
    }
  });

  test('a failing or silent model: error event and a spoken apology, and the call goes on', async () => {
    const client = await call(server, {});
    try {
      for (const mode of ['fail', 'hang'] as const) {
        behaviour = mode;
        const from = client.events.length;
        typed(client, `Question while the model is ${mode}`);
        const error = await nextAfter(client, 'error', from);
        assert.equal(error.error.code, 'model_error');
        assert.match((await nextAfter(client, 'response.output_item.done', from)).text, /Sorry/);
        await nextAfter(client, 'response.audio.started', from);
      }
      assert.equal(client.pc.connectionState, 'connected');
    } finally {
      behaviour = 'ok';
      client.close();
    }
  });
});
