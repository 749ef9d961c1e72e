// Traces per call and per turn (issue 47 item 3), through a real call: a WebRTC peer speaks two
// questions to a node whose models are OpenAI-compatible services in the test, and whose traces go
// to an OTLP/HTTP receiver in the test. The node is stopped with SIGTERM, which exports the spans it
// still holds, so every span is there once it has exited.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { TURN_STAGES } from '../src/observability/callTrace.ts';
import { startModelBackends, type ModelBackends } from './helpers/modelBackends.ts';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from './helpers/otlpReceiver.ts';
import { openCall, outboundAudioPackets, type RtcClient } from './helpers/rtcClient.ts';
import { mintToken, startServer, type RunningServer } from './helpers/server.ts';
import { attachMicrophone, speak } from './helpers/speech.ts';
import { until } from './helpers/wait.ts';
import { startWebhookReceiver, type WebhookReceiver } from './helpers/webhookReceiver.ts';

const WEBHOOK_SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const TRANSCRIPT = 'hello from the transcription service';
const REPLY = ['Hello ', 'from the ', 'language model. ', 'Second sentence.'];

let backends: ModelBackends;
before(async () => {
  backends = await startModelBackends({ transcript: TRANSCRIPT, replyPieces: REPLY });
});
after(() => backends.close());

/** A node whose speech and reply models are the test's services. */
function modelEnv(): Record<string, string> {
  return { STT_URL: backends.baseUrl, LLM_BASE_URL: backends.baseUrl, TTS_URL: backends.baseUrl, LOG_LEVEL: 'info', LOG_FORMAT: 'json' };
}

async function call(server: RunningServer): Promise<RtcClient> {
  const token = await mintToken(server.baseUrl, server.devKey);
  const client = await openCall(server.baseUrl, token, { params: {} });
  await client.waitConnected();
  await client.nextEvent('session.created');
  return client;
}

/** Speaks `questions` one turn at a time; each turn's timings (response.audio.started) once its reply has played. */
async function talk(client: RtcClient, questions: string[]): Promise<Record<string, number>[]> {
  const mic = await attachMicrophone(client);
  // Its leading silence has reached the server's VAD.
  await until('the microphone to send', () => outboundAudioPackets(client), (n) => n >= 25);
  const timings: Record<string, number>[] = [];
  for (const question of questions) {
    const from = client.events.length;
    await mic.say(speak(question));
    timings.push((await client.nextEvent('response.audio.started', 30_000, from)).timings);
    // Its audio has all played: the next turn is not spoken over it.
    await client.nextEvent('response.audio.done', 30_000, from);
  }
  mic.stop();
  return timings;
}

/** The JSON log lines of a node's stderr. */
function logLines(server: RunningServer): any[] {
  return server
    .stderr()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
}

/** What a traced call left: the spans the receiver got, the timings the client was told, the node's log. */
interface TracedCall {
  spans: ReceivedSpan[];
  timings: Record<string, number>[];
  server: RunningServer;
}

/**
 * A call to a node exporting traces to a receiver in the test, speaking `questions`, then the node
 * stopped with SIGTERM while the caller is still on (its call ends server_shutdown, and what the node
 * still holds is exported before it exits). The call.started webhook has been delivered by then.
 */
async function tracedCall(env: Record<string, string>, questions: string[]): Promise<TracedCall> {
  const receiver: OtlpReceiver = await startOtlpReceiver();
  const hooks: WebhookReceiver = await startWebhookReceiver(WEBHOOK_SECRET);
  const server = await startServer({
    ...modelEnv(),
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    WEBHOOK_URL: hooks.url,
    WEBHOOK_SECRET,
    WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32',
    ...env,
  });
  let timings: Record<string, number>[];
  let client: RtcClient | undefined;
  try {
    client = await call(server);
    timings = await talk(client, questions);
    await until('the call.started webhook', () => hooks.events.map((e) => e.type), (types) => types.includes('call.started'));
  } finally {
    assert.equal(await server.stop('SIGTERM'), 0);
    client?.close();
    await hooks.close();
    await receiver.close();
  }
  assert.ok(receiver.requests.every((r) => r.path === '/v1/traces' && r.contentType?.startsWith('application/json')), JSON.stringify(receiver.requests));
  return { spans: receiver.spans, timings, server };
}

/** The call's one span, its turns' spans (in order) and a span's children (in order). */
function callTree(spans: ReceivedSpan[]) {
  const calls = spans.filter((s) => s.name === 'call');
  assert.equal(calls.length, 1, `call spans: ${calls.length}`);
  const callSpan = calls[0]!;
  const inCall = spans.filter((s) => s.traceId === callSpan.traceId);
  const childrenOf = (parent: ReceivedSpan) => inCall.filter((s) => s.parentSpanId === parent.spanId).sort((a, b) => (a.startNs < b.startNs ? -1 : 1));
  const turns = childrenOf(callSpan).filter((s) => s.name === 'turn');
  return { callSpan, inCall, turns, childrenOf };
}

/**
 * A turn's span against what the client was told (response.audio.started): its children are the
 * stages, in order, each beginning where the one before ended; together they are the turn, and up
 * to the first audio they are the voice-to-voice time, within 20 ms.
 */
function assertTurn(turn: ReceivedSpan, stages: ReceivedSpan[], told: Record<string, number>, label: string): void {
  assert.equal(turn.attributes['parley.turn.outcome'], 'replied', label);
  assert.equal(turn.attributes['parley.turn.voice_to_voice_ms'], told.voice_to_voice_ms, label);
  assert.deepEqual(stages.map((s) => s.name), TURN_STAGES.map((s) => `turn.${s}`), `${label}: its stages`);
  assert.equal(stages[0]!.startNs, turn.startNs, `${label}: the first stage begins with the turn`);
  for (let k = 1; k < stages.length; k++) assert.ok(stages[k]!.startNs >= stages[k - 1]!.endNs, `${label}: ${stages[k]!.name} begins after ${stages[k - 1]!.name} ended`);
  const sum = stages.reduce((n, s) => n + s.durationMs, 0);
  assert.ok(Math.abs(sum - turn.durationMs) <= 20, `${label}: the stages add up to ${sum.toFixed(1)} ms, the turn is ${turn.durationMs.toFixed(1)} ms`);
  const toFirstAudio = stages.slice(0, 4).reduce((n, s) => n + s.durationMs, 0);
  assert.ok(Math.abs(toFirstAudio - told.voice_to_voice_ms!) <= 20, `${label}: the stages to the first audio take ${toFirstAudio.toFixed(1)} ms, voice_to_voice_ms is ${told.voice_to_voice_ms}`);
  assert.ok(Math.abs(stages[0]!.durationMs - told.end_of_turn_wait_ms!) <= 1, `${label}: end_of_speech is end_of_turn_wait_ms`);
  assert.ok(Math.abs(stages[1]!.durationMs - told.transcription_ms!) <= 1, `${label}: recognition is transcription_ms`);
}

test('a call with two spoken turns: one call span, a span per turn with its stages in order adding up to voice-to-voice, its upstream requests under it, a webhook delivery', async () => {
  // Replies start at the end of the turn (none prepared during a pause): every request of a turn is made inside it.
  const { spans, timings, server } = await tracedCall(
    { PREPARE_REPLY_AFTER_MS: '0', OTEL_SERVICE_NAME: 'parley-under-test', OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=test' },
    ['what time is it', 'and what day is it today'],
  );
  const { callSpan, inCall, turns, childrenOf } = callTree(spans);

  // The call span names its door, model, key (by id) and how it ended.
  assert.equal(callSpan.parentSpanId, undefined);
  assert.equal(callSpan.attributes['parley.call.door'], 'webrtc');
  assert.equal(callSpan.attributes['parley.call.model'], 'orga-1-beta');
  assert.match(String(callSpan.attributes['parley.api_key.id']), /^key_/);
  assert.equal(callSpan.attributes['parley.call.end_reason'], 'server_shutdown');
  assert.ok(callSpan.events.some((e) => e.name === 'connected'));
  assert.equal(callSpan.resource['service.name'], 'parley-under-test');
  assert.equal(callSpan.resource['deployment.environment'], 'test');
  assert.equal(typeof callSpan.resource['service.instance.id'], 'string');

  assert.equal(turns.length, 2, `turn spans: ${turns.map((t) => t.attributes['parley.turn.outcome']).join(', ')}`);
  turns.forEach((turn, i) => {
    assertTurn(turn, childrenOf(turn).filter((s) => s.name.startsWith('turn.')), timings[i]!, `turn ${i + 1}`);
    // The turn's requests: its recognition, its reply's model and speech, each answered 200.
    for (const kind of ['stt', 'llm', 'tts']) {
      const upstream = childrenOf(turn).filter((s) => s.name === `upstream.${kind}`);
      assert.ok(upstream.length >= 1, `turn ${i + 1}: upstream.${kind} spans: ${upstream.length}`);
      for (const s of upstream) {
        assert.equal(s.attributes['server.address'], '127.0.0.1');
        assert.equal(s.attributes['http.response.status_code'], 200);
        if (kind !== 'stt') assert.equal(s.attributes['parley.response.id'], turn.attributes['parley.response.id']);
      }
    }
  });

  // The call.started webhook's delivery: a span of its own.
  const delivery = spans.find((s) => s.name === 'webhook.delivery' && s.attributes['parley.webhook.event_type'] === 'call.started');
  assert.ok(delivery, `spans: ${[...new Set(spans.map((s) => s.name))].join(', ')}`);
  assert.equal(delivery.attributes['parley.webhook.outcome'], 'delivered');
  assert.equal(delivery.attributes['http.response.status_code'], 204);

  // No words in any span by default: neither the caller's nor the reply's; no key.
  const attributeText = JSON.stringify(inCall.concat(delivery).map((s) => [s.attributes, s.events]));
  assert.ok(!attributeText.includes(TRANSCRIPT), 'no transcript in the spans');
  assert.ok(!attributeText.includes('Second sentence'), 'no reply text in the spans');
  assert.ok(!attributeText.includes('sk_parley'), 'no API key in the spans');

  // Log lines about the call carry its trace and span ids.
  const created = logLines(server).find((l) => l.msg === 'call created');
  assert.equal(created?.trace_id, callSpan.traceId);
  assert.equal(created?.span_id, callSpan.spanId);
});

test('replies prepared during the caller\'s pause (the default): the turn still runs from the end of speech to the first packet, its stages adding up', async () => {
  const { spans, timings } = await tracedCall({}, ['what time is it']);
  const { callSpan, turns, childrenOf, inCall } = callTree(spans);
  assert.equal(turns.length, 1);
  const turn = turns[0]!;
  assertTurn(turn, childrenOf(turn).filter((s) => s.name.startsWith('turn.')), timings[0]!, 'the turn');
  // A reply prepared before the turn was over made its requests under the call; the response id
  // ties them to the turn either way.
  const llm = inCall.filter((s) => s.name === 'upstream.llm' && s.attributes['parley.response.id'] === turn.attributes['parley.response.id']);
  assert.equal(llm.length, 1);
  assert.ok([callSpan.spanId, turn.spanId].includes(llm[0]!.parentSpanId!));
});

test('tracing off (OTEL_TRACES_EXPORTER=none beside an endpoint): a spoken turn, and nothing is exported', async () => {
  const receiver = await startOtlpReceiver();
  const server = await startServer({ ...modelEnv(), OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url });
  try {
    const client = await call(server);
    try {
      await talk(client, ['what time is it']);
    } finally {
      client.close();
    }
  } finally {
    assert.equal(await server.stop('SIGTERM'), 0);
    await receiver.close();
  }
  assert.deepEqual(receiver.requests, []);
  const created = logLines(server).find((l) => l.msg === 'call created');
  assert.ok(created, 'the call was logged');
  assert.equal(created.trace_id, undefined);
});
