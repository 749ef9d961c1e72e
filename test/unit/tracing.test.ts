// Traces: when they are on, and the spans of a call's turns — each stage a child that begins where
// the one before ended, so that the children add up to the turn — with spans kept in memory.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ROOT_CONTEXT, type HrTime } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { NO_CALL_TRACE, TURN_STAGES, startCallTrace } from '../../src/observability/callTrace.ts';
import { NO_SPAN, tracesWanted, upstreamFailed, upstreamSpan, type SpanParent } from '../../src/observability/tracing.ts';
import { configProblems } from '../helpers/config.ts';

function memoryTracer(content = false): { root: SpanParent; spans: () => ReadableSpan[] } {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  return { root: { tracer: provider.getTracer('test'), context: ROOT_CONTEXT, content }, spans: () => exporter.getFinishedSpans() };
}

const ms = (t: HrTime) => t[0] * 1000 + t[1] / 1e6;
const duration = (s: ReadableSpan) => ms(s.duration);
const childrenOf = (spans: ReadableSpan[], parent: ReadableSpan) =>
  spans.filter((s) => s.parentSpanContext?.spanId === parent.spanContext().spanId).sort((a, b) => ms(a.startTime) - ms(b.startTime));

test('traces are off by default; an endpoint or OTEL_TRACES_EXPORTER=otlp turns them on; none and OTEL_SDK_DISABLED win', () => {
  const off = { OTEL_SDK_DISABLED: false, OTEL_TRACES_EXPORTER: undefined, OTEL_EXPORTER_OTLP_ENDPOINT: undefined, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: undefined };
  assert.equal(tracesWanted(off), false);
  assert.equal(tracesWanted({ ...off, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), true);
  assert.equal(tracesWanted({ ...off, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }), true);
  assert.equal(tracesWanted({ ...off, OTEL_TRACES_EXPORTER: 'otlp' }), true);
  assert.equal(tracesWanted({ ...off, OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), false);
  assert.equal(tracesWanted({ ...off, OTEL_SDK_DISABLED: true, OTEL_TRACES_EXPORTER: 'otlp' }), false);
});

test('the OTEL_* settings are checked at start, saying what is wrong without repeating a URL', () => {
  assert.equal(configProblems({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' }), '');
  assert.match(configProblems({ OTEL_TRACES_EXPORTER: 'zipkin' }), /OTEL_TRACES_EXPORTER: must be one of otlp, none/);
  const bad = configProblems({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector-secret:4318' });
  assert.match(bad, /OTEL_EXPORTER_OTLP_ENDPOINT: expected an http\(s\) URL/);
  assert.doesNotMatch(bad, /collector-secret/);
  assert.match(configProblems({ OTEL_TRACES_SAMPLER_ARG: '2' }), /OTEL_TRACES_SAMPLER_ARG: must be between 0 and 1/);
  assert.match(configProblems({ OTEL_BSP_MAX_QUEUE_SIZE: '10', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '20' }), /must not exceed OTEL_BSP_MAX_QUEUE_SIZE/);
  assert.match(configProblems({ OTEL_TRACE_CONTENT: 'maybe' }), /OTEL_TRACE_CONTENT: expected true or false/);
});

test('a turn: one child per stage, in order, each starting where the last ended, adding up to the turn', () => {
  const { root, spans } = memoryTracer();
  const call = startCallTrace(root, { 'parley.call.door': 'webrtc' });
  const t0 = performance.now() - 2000;
  const turn = call.turn('item_1', t0)!;
  const marks = [t0 + 500, t0 + 650, t0 + 900, t0 + 1100, t0 + 1115];
  TURN_STAGES.forEach((stage, i) => turn.reached(stage, marks[i]!));
  turn.end();
  call.end(false, { 'parley.call.end_reason': 'client_hangup' });

  const all = spans();
  const callSpan = all.find((s) => s.name === 'call')!;
  const turnSpan = all.find((s) => s.name === 'turn')!;
  assert.equal(turnSpan.parentSpanContext?.spanId, callSpan.spanContext().spanId);
  assert.equal(turnSpan.attributes['parley.turn.outcome'], 'replied');
  const children = childrenOf(all, turnSpan);
  assert.deepEqual(children.map((c) => c.name), TURN_STAGES.map((s) => `turn.${s}`));
  const expected = [500, 150, 250, 200, 15];
  children.forEach((c, i) => assert.ok(Math.abs(duration(c) - expected[i]!) < 0.01, `${c.name}: ${duration(c)} ms`));
  for (let i = 1; i < children.length; i++) assert.ok(Math.abs(ms(children[i]!.startTime) - ms(children[i - 1]!.endTime)) < 0.01, 'contiguous');
  assert.ok(Math.abs(ms(children[0]!.startTime) - ms(turnSpan.startTime)) < 0.01);
  const sum = children.reduce((n, c) => n + duration(c), 0);
  assert.ok(Math.abs(sum - duration(turnSpan)) < 0.01, `${sum} vs ${duration(turnSpan)}`);
  assert.equal(callSpan.attributes['parley.call.end_reason'], 'client_hangup');
});

test('a reply prepared while the caller spoke: stages done before the turn was over take no time of their own', () => {
  const { root, spans } = memoryTracer();
  const call = startCallTrace(root, {});
  const t0 = performance.now() - 2000;
  const turn = call.turn('item_1', t0)!;
  turn.reached('end_of_speech', t0 + 500);
  turn.reached('recognition', t0 + 560);
  // The model's first token came before the turn's end was certain.
  turn.reached('first_token', t0 + 300);
  turn.reached('first_audio', t0 + 561);
  turn.reached('first_packet', t0 + 570);
  turn.end();
  const all = spans();
  const turnSpan = all.find((s) => s.name === 'turn')!;
  const durations = childrenOf(all, turnSpan).map((c) => Math.round(duration(c)));
  assert.deepEqual(durations, [500, 60, 0, 1, 9]);
  assert.equal(Math.round(duration(turnSpan)), 570);
});

test('a turn cut short: the stage under way ends there, unfinished, and a failure marks it; the call ends turns left open', () => {
  const { root, spans } = memoryTracer();
  const call = startCallTrace(root, {});
  const t0 = performance.now() - 1000;
  const failed = call.turn('item_1', t0)!;
  failed.reached('end_of_speech', t0 + 500);
  failed.abandon('recognition_failed', new Error('transcription service answered HTTP 500'));
  const open = call.turn('item_2', t0 + 600)!;
  open.reached('end_of_speech', t0 + 700);
  call.end(true, { 'parley.call.end_reason': 'media_failed' });
  const all = spans();
  const [first, second] = all.filter((s) => s.name === 'turn').sort((a, b) => ms(a.startTime) - ms(b.startTime));
  assert.equal(first!.attributes['parley.turn.outcome'], 'recognition_failed');
  assert.equal(first!.status.code, 2);
  const recognition = childrenOf(all, first!).find((c) => c.name === 'turn.recognition')!;
  assert.equal(recognition.attributes['parley.stage.completed'], false);
  assert.equal(recognition.status.message, 'transcription service answered HTTP 500');
  assert.equal(second!.attributes['parley.turn.outcome'], 'call_ended');
  assert.deepEqual(childrenOf(all, second!).map((c) => c.name), ['turn.end_of_speech', 'turn.recognition']);
  const callSpan = all.find((s) => s.name === 'call')!;
  assert.equal(callSpan.status.code, 2);
  assert.ok(ms(callSpan.endTime) >= ms(second!.endTime), 'the call span ends after its turns');
});

test("the caller's words go on a turn's span only when OTEL_TRACE_CONTENT allows", () => {
  for (const content of [false, true]) {
    const { root, spans } = memoryTracer(content);
    const call = startCallTrace(root, {});
    const turn = call.turn('item_1', performance.now() - 100)!;
    turn.words('what time is it');
    turn.end('no_reply');
    assert.equal(spans().find((s) => s.name === 'turn')!.attributes['parley.turn.transcript'], content ? 'what time is it' : undefined);
  }
});

test('tracing off: no call trace, no turn, no span; an upstream span names the address and path, never the query', () => {
  assert.equal(startCallTrace(undefined, {}), NO_CALL_TRACE);
  assert.equal(NO_CALL_TRACE.turn('item_1', 0), undefined);
  assert.equal(upstreamSpan(undefined, 'llm', 'http://127.0.0.1:1/v1/chat/completions', 'm'), NO_SPAN);
  const { root, spans } = memoryTracer();
  const span = upstreamSpan(root, 'stt', 'https://stt.example:8443/v1/audio/transcriptions?key=secret', 'whisper-1');
  const abort = new AbortController();
  abort.abort();
  upstreamFailed(span, new Error('aborted'), abort.signal);
  span.end();
  const [s] = spans();
  assert.equal(s!.name, 'upstream.stt');
  assert.equal(s!.attributes['server.address'], 'stt.example');
  assert.equal(s!.attributes['server.port'], 8443);
  assert.equal(s!.attributes['url.path'], '/v1/audio/transcriptions');
  assert.equal(s!.attributes['parley.upstream.cancelled'], true, 'a cancelled request is not an error');
  assert.equal(s!.status.code, 0);
  assert.ok(!JSON.stringify(s!.attributes).includes('secret'));
});
