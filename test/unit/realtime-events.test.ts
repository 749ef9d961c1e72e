// An upstream realtime model's server events in Parley's terms (agent/realtime/openaiEvents.ts), GA
// and beta: a spoken reply and its audio, the caller's turn and transcript, a function call, usage,
// errors naming whose command they answer, the upstream's truncation guesses left out, and what
// Parley cut kept as cut. Also where the caller stopped hearing (agent/realtime/heard.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HeardAudio } from '../../src/agent/realtime/heard.ts';
import { EventMapper } from '../../src/agent/realtime/openaiEvents.ts';
import type { UpstreamEvent } from '../../src/agent/realtime/types.ts';
import { encodeWireAudio } from '../../src/media/audio/wireAudio.ts';
import { Conversation, type Item } from '../../src/session/conversation.ts';
import { serverEventFromBeta } from '../../src/session/openaiBeta.ts';

type Json = Record<string, any>;

function mapper(format: 'pcm16' | 'g711_ulaw' = 'pcm16', known: Conversation = new Conversation()) {
  const commands = new Map([['pb_1', { origin: 'client' as const, command: 'conversation.item.create' }]]);
  const m = new EventMapper({ audioFormat: format, known: (id) => known.get(id), commandOf: (id) => commands.get(id) });
  const all: UpstreamEvent[] = [];
  return { all, map: (e: Json) => { const out = m.map(e); all.push(...out); return out; }, freeze: (id: string) => m.freeze(id) };
}

const pcm = (n: number) => Int16Array.from({ length: n }, (_, i) => (i * 37) % 2000);
const b64 = (samples: Int16Array, enc: 'pcm16' | 'pcmu' = 'pcm16') => encodeWireAudio(samples, enc).toString('base64');

/** A GA reply as OpenAI sends it: created, a spoken message, its audio and transcript, done with usage. */
function gaReply(): Json[] {
  const ids = { response_id: 'resp_1', item_id: 'item_a', output_index: 0, content_index: 0 };
  return [
    { type: 'response.created', response: { id: 'resp_1', status: 'in_progress', output: [], conversation_id: 'conv_1', output_modalities: ['audio'] } },
    { type: 'response.output_item.added', response_id: 'resp_1', output_index: 0, item: { id: 'item_a', type: 'message', role: 'assistant', status: 'in_progress', content: [] } },
    { type: 'conversation.item.added', previous_item_id: 'item_u', item: { id: 'item_a', type: 'message', role: 'assistant', status: 'in_progress', content: [] } },
    { type: 'response.content_part.added', ...ids, part: { type: 'audio', transcript: '' } },
    { type: 'response.output_audio_transcript.delta', ...ids, delta: 'It is ' },
    { type: 'response.output_audio.delta', ...ids, delta: b64(pcm(480)) },
    { type: 'response.output_audio_transcript.delta', ...ids, delta: 'noon.' },
    { type: 'response.output_audio.done', ...ids },
    { type: 'response.output_audio_transcript.done', ...ids, transcript: 'It is noon.' },
    { type: 'response.content_part.done', ...ids, part: { type: 'audio', transcript: 'It is noon.' } },
    { type: 'response.output_item.done', response_id: 'resp_1', output_index: 0, item: { id: 'item_a', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_audio', transcript: 'It is noon.' }] } },
    { type: 'conversation.item.done', item: { id: 'item_a', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_audio', transcript: 'It is noon.' }] } },
    {
      type: 'response.done',
      response: { id: 'resp_1', status: 'completed', status_details: null, conversation_id: 'conv_1', output: [{ id: 'item_a', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_audio', transcript: 'It is noon.' }] }], usage: { input_tokens: 120, output_tokens: 45, total_tokens: 165 } },
    },
    { type: 'rate_limits.updated', rate_limits: [] },
  ];
}

test("a GA reply: the call's events in order, its audio as PCM, its message spoken from the start, usage", () => {
  const m = mapper();
  for (const e of gaReply()) m.map(e);
  assert.deepEqual(m.all.map((e) => e.type), [
    'response.created',
    'response.output_item.added',
    'item.added',
    'response.text.delta',
    'upstream.audio',
    'response.text.delta',
    'response.audio.done',
    'response.text.done',
    'response.output_item.done',
    'item.done',
    'response.done',
  ]);
  const added = m.all.find((e) => e.type === 'response.output_item.added') as Extract<UpstreamEvent, { type: 'response.output_item.added' }>;
  assert.deepEqual((added.item as Json).content, [{ type: 'output_audio', transcript: '' }], 'the doors send a message’s audio by its first part');
  const audio = m.all.find((e) => e.type === 'upstream.audio') as Extract<UpstreamEvent, { type: 'upstream.audio' }>;
  assert.equal(audio.rate, 24_000);
  assert.deepEqual(audio.pcm, pcm(480));
  assert.deepEqual([audio.responseId, audio.itemId], ['resp_1', 'item_a']);
  const deltas = m.all.filter((e) => e.type === 'response.text.delta') as Extract<UpstreamEvent, { type: 'response.text.delta' }>[];
  assert.deepEqual(deltas.map((d) => [d.delta, d.audio]), [['It is ', true], ['noon.', true]]);
  const itemAdded = m.all.find((e) => e.type === 'item.added') as Extract<UpstreamEvent, { type: 'item.added' }>;
  assert.equal(itemAdded.previousItemId, 'item_u');
  assert.deepEqual((itemAdded.item as Json).content, [{ type: 'output_audio', transcript: 'It is noon.' }], 'the item kept up to date as the reply went on');
  const done = m.all.at(-1) as Extract<UpstreamEvent, { type: 'response.done' }>;
  assert.equal(done.response.status, 'completed');
  assert.equal(done.response.inConversation, true);
  assert.deepEqual(done.response.usage, { inputTokens: 120, outputTokens: 45 });
  assert.deepEqual(done.response.output.map((i) => i.id), ['item_a']);
});

test('a beta reply (read as GA): audio.delta, audio_transcript, conversation.item.created, assistant content `audio`, modalities', () => {
  const m = mapper();
  const ids = { response_id: 'resp_b', item_id: 'item_b', output_index: 0, content_index: 0 };
  const beta: Json[] = [
    { type: 'response.created', response: { id: 'resp_b', status: 'in_progress', output: [], modalities: ['text', 'audio'] } },
    { type: 'response.output_item.added', response_id: 'resp_b', output_index: 0, item: { id: 'item_b', type: 'message', role: 'assistant', status: 'in_progress', content: [] } },
    { type: 'conversation.item.created', previous_item_id: null, item: { id: 'item_b', type: 'message', role: 'assistant', status: 'in_progress', content: [] } },
    { type: 'response.audio.delta', ...ids, delta: b64(pcm(240)) },
    { type: 'response.audio_transcript.delta', ...ids, delta: 'Hello.' },
    { type: 'response.audio.done', ...ids },
    { type: 'response.audio_transcript.done', ...ids, transcript: 'Hello.' },
    { type: 'response.output_item.done', response_id: 'resp_b', output_index: 0, item: { id: 'item_b', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'audio', transcript: 'Hello.' }] } },
    { type: 'response.done', response: { id: 'resp_b', status: 'cancelled', status_details: { type: 'cancelled', reason: 'turn_detected' }, output: [], modalities: ['text', 'audio'] } },
  ];
  for (const e of beta) m.map(serverEventFromBeta(e));
  assert.deepEqual(m.all.map((e) => e.type), ['response.created', 'response.output_item.added', 'item.added', 'upstream.audio', 'response.text.delta', 'response.audio.done', 'response.text.done', 'response.output_item.done', 'response.done']);
  const itemDone = m.all.find((e) => e.type === 'response.output_item.done') as Extract<UpstreamEvent, { type: 'response.output_item.done' }>;
  assert.deepEqual((itemDone.item as Json).content, [{ type: 'output_audio', transcript: 'Hello.' }]);
  const done = m.all.at(-1) as Extract<UpstreamEvent, { type: 'response.done' }>;
  assert.deepEqual([done.response.status, done.response.reason], ['cancelled', 'turn_detected']);
  assert.equal(done.response.usage, undefined);
});

test("the caller's turn: VAD, commit, the user item with its transcript; an item the call already has is not news", () => {
  const conversation = new Conversation();
  const mine: Item = { id: 'item_client', type: 'function_call_output', status: 'completed', callId: 'call_1', output: '{"time":"noon"}' };
  conversation.add(mine);
  const m = mapper('pcm16', conversation);
  m.map({ type: 'input_audio_buffer.speech_started', item_id: 'item_u', audio_start_ms: 420 });
  m.map({ type: 'input_audio_buffer.speech_stopped', item_id: 'item_u', audio_end_ms: 1980 });
  m.map({ type: 'input_audio_buffer.committed', item_id: 'item_u', previous_item_id: 'item_client' });
  m.map({ type: 'conversation.item.added', previous_item_id: 'item_client', item: { id: 'item_u', type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_audio', transcript: null }] } });
  m.map({ type: 'conversation.item.input_audio_transcription.delta', item_id: 'item_u', content_index: 0, delta: 'what time' });
  m.map({ type: 'conversation.item.input_audio_transcription.completed', item_id: 'item_u', content_index: 0, transcript: 'what time is it' });
  assert.deepEqual(m.map({ type: 'conversation.item.added', item: { id: 'item_client', type: 'function_call_output', call_id: 'call_1', output: '{"time":"noon"}' } }), [], "the upstream's copy of the client's item");
  assert.deepEqual(m.all[0], { type: 'input.speech_started', itemId: 'item_u', audioStartMs: 420 });
  assert.deepEqual(m.all[1], { type: 'input.speech_stopped', itemId: 'item_u', audioEndMs: 1980 });
  assert.deepEqual(m.all[2], { type: 'input.committed', itemId: 'item_u', previousItemId: 'item_client' });
  const added = m.all[3] as Extract<UpstreamEvent, { type: 'item.added' }>;
  assert.deepEqual(added.item, { id: 'item_u', type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_audio', transcript: 'what time is it' }] });
  assert.deepEqual(m.all.slice(4).map((e) => e.type), ['transcription.delta', 'transcription.completed']);
});

test('a function call: its item, arguments as they stream, done with name and call id', () => {
  const m = mapper();
  m.map({ type: 'response.created', response: { id: 'resp_f', output: [] } });
  m.map({ type: 'response.output_item.added', response_id: 'resp_f', output_index: 0, item: { id: 'item_f', type: 'function_call', status: 'in_progress', call_id: 'call_9', name: 'get_time', arguments: '' } });
  m.map({ type: 'response.function_call_arguments.delta', response_id: 'resp_f', item_id: 'item_f', output_index: 0, call_id: 'call_9', delta: '{"zone":' });
  m.map({ type: 'response.function_call_arguments.delta', response_id: 'resp_f', item_id: 'item_f', output_index: 0, call_id: 'call_9', delta: '"UTC"}' });
  m.map({ type: 'response.function_call_arguments.done', response_id: 'resp_f', item_id: 'item_f', output_index: 0, call_id: 'call_9', name: 'get_time', arguments: '{"zone":"UTC"}' });
  m.map({ type: 'response.output_item.done', response_id: 'resp_f', output_index: 0, item: { id: 'item_f', type: 'function_call', status: 'completed', call_id: 'call_9', name: 'get_time', arguments: '{"zone":"UTC"}' } });
  m.map({ type: 'response.done', response: { id: 'resp_f', status: 'completed', output: [{ id: 'item_f', type: 'function_call' }], usage: { input_tokens: 10, output_tokens: 5 } } });
  const done = m.all.find((e) => e.type === 'response.function_call_arguments.done') as Extract<UpstreamEvent, { type: 'response.function_call_arguments.done' }>;
  assert.deepEqual([done.callId, done.name, done.arguments], ['call_9', 'get_time', '{"zone":"UTC"}']);
  const deltas = m.all.filter((e) => e.type === 'response.function_call_arguments.delta') as Extract<UpstreamEvent, { type: 'response.function_call_arguments.delta' }>[];
  assert.deepEqual(deltas.map((d) => d.callId), ['call_9', 'call_9']);
  const item = (m.all.at(-1) as Extract<UpstreamEvent, { type: 'response.done' }>).response.output[0] as Json;
  assert.deepEqual([item.type, item.callId, item.name, item.arguments, item.status], ['function_call', 'call_9', 'get_time', '{"zone":"UTC"}', 'completed']);
});

test("an error names whose command it answers; the upstream's truncation guesses and the rest are not passed on", () => {
  const m = mapper();
  assert.deepEqual(m.map({ type: 'error', error: { type: 'invalid_request_error', code: 'invalid_value', message: 'Bad item.', event_id: 'pb_1' } }), [
    { type: 'upstream.error', code: 'invalid_value', message: 'Bad item.', origin: 'client', command: 'conversation.item.create' },
  ]);
  assert.deepEqual(m.map({ type: 'error', error: { type: 'server_error', message: 'Oops.' } }), [{ type: 'upstream.error', code: 'server_error', message: 'Oops.' }]);
  for (const type of ['conversation.item.truncated', 'session.created', 'session.updated', 'conversation.created', 'rate_limits.updated', 'response.content_part.added', 'output_audio_buffer.started', 'something.new']) {
    assert.deepEqual(m.map({ type, item_id: 'item_a', audio_end_ms: 1234 }), [], type);
  }
});

test('an item Parley cut keeps the words the caller heard, whatever the upstream says of it later', () => {
  const m = mapper();
  const events = gaReply();
  for (const e of events.slice(0, 6)) m.map(e);
  const item = (m.all.find((e) => e.type === 'item.added') as Extract<UpstreamEvent, { type: 'item.added' }>).item as Json;
  item.content[0].transcript = 'It is';
  m.freeze('item_a');
  for (const e of events.slice(6)) m.map(e);
  assert.equal(item.content[0].transcript, 'It is');
});

test('G.711 μ-law audio at 8 kHz', () => {
  const m = mapper('g711_ulaw');
  const [audio] = m.map({ type: 'response.output_audio.delta', response_id: 'r', item_id: 'i', delta: b64(pcm(160), 'pcmu') }) as Extract<UpstreamEvent, { type: 'upstream.audio' }>[];
  assert.equal(audio!.rate, 8000);
  assert.equal(audio!.pcm.length, 160);
});

test('what the caller heard: the playout position falls in the item cut, later items not started are cut at 0', () => {
  const heard = new HeardAudio();
  heard.written('item_1', 'resp_1', 1000);
  heard.written('item_1', 'resp_1', 500);
  assert.equal(heard.writtenMs('item_1'), 1500);
  // 400 ms of it still queued when the caller spoke: they heard 1100.
  assert.deepEqual(heard.cleared(400), [{ itemId: 'item_1', responseId: 'resp_1', heardMs: 1100 }]);
  assert.equal(heard.writtenMs('item_1'), 1100);
  // A fully heard item is not cut; two queued items: the first heard part way, the second not at all.
  heard.written('item_2', 'resp_2', 300);
  heard.written('item_3', 'resp_2', 700);
  heard.written('item_4', 'resp_2', 200);
  assert.deepEqual(heard.cleared(500), [
    { itemId: 'item_3', responseId: 'resp_2', heardMs: 400 },
    { itemId: 'item_4', responseId: 'resp_2', heardMs: 0 },
  ]);
  assert.deepEqual(heard.cleared(0), [], 'nothing queued: nothing cut');
});
