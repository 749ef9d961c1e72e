import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EchoGuard } from '../../src/agent/turn/echoGuard.ts';
import { FakeAudioOut } from '../helpers/agentFakes.ts';
import { rms } from '../helpers/pcm.ts';
import { speak } from '../helpers/speech.ts';

const reply = speak('Here is a rather long answer to your question, with several clauses in it, so that it takes a while to say.');
const caller = speak('stop please stop', 16_000);

/**
 * The agent says `reply` while the caller's microphone hears it back `gain` times as loud, `delayMs`
 * late (48 kHz → 16 kHz), plus `words` from `atMs` on: the 20 ms frames that reach the VAD.
 */
function call(opts: { gain: number; delayMs: number; words?: Int16Array; atMs?: number; durationMs?: number }) {
  const out = new FakeAudioOut();
  const guard = new EchoGuard(16_000);
  guard.watch(out).write(reply);
  const heard: Int16Array[] = [];
  const durationMs = opts.durationMs ?? 4000;
  for (let t = 0; t < durationMs; t += 20) {
    out.play(20);
    const frame = new Int16Array(320);
    for (let i = 0; i < 320; i++) {
      const at48 = Math.round((t - opts.delayMs) * 48 + i * 3);
      const echo = at48 >= 0 && at48 < reply.length ? reply[at48]! * opts.gain : 0;
      const w = opts.words && opts.atMs !== undefined ? (opts.words[(t - opts.atMs) * 16 + i] ?? 0) : 0;
      frame[i] = Math.max(-32768, Math.min(32767, Math.round(echo + w)));
    }
    heard.push(guard.filter(frame));
  }
  return { heard, guard, level: (fromMs: number, toMs: number) => rms(concat(heard.slice(fromMs / 20, toMs / 20))) };
}

function concat(parts: Int16Array[]): Int16Array {
  const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  parts.reduce((at, p) => (out.set(p, at), at + p.length), 0);
  return out;
}

test('the agent heard back 10 dB down and 40-120 ms late is damped before the VAD', () => {
  for (const delayMs of [40, 80, 120]) {
    const { level, guard } = call({ gain: 0.316, delayMs });
    const echoLevel = rms(reply) * 0.316;
    // After the first half second (the coupling is learned), what is left is well under the echo.
    assert.ok(level(500, 3500) < echoLevel / 4, `${delayMs} ms: ${level(500, 3500).toFixed(0)} left of ${echoLevel.toFixed(0)}`);
    assert.ok(guard.stats().dampedFrames > 100);
  }
});

test('the caller speaking over the echo passes untouched', () => {
  const { heard } = call({ gain: 0.316, delayMs: 80, words: caller, atMs: 1500 });
  // Each 20 ms of the caller's words clearly louder than the echo (≈ 3,000 RMS at its loudest)
  // reaches the VAD as it was (their quieter start, the "s", is taken for echo).
  const caller20 = (k: number) => caller.subarray(k * 320, k * 320 + 320);
  const frames = heard.slice(1500 / 20, (1500 + caller.length / 16) / 20);
  const loud = frames.map((f, k) => ({ f, k })).filter(({ k }) => rms(caller20(k)) > 4000);
  const passed = loud.filter(({ f, k }) => rms(f) > rms(caller20(k)) / 2);
  assert.ok(loud.length > 10);
  assert.equal(passed.length, loud.length, `${passed.length} of ${loud.length} loud frames of the caller passed`);
});

test('a client with its own echo cancellation loses nothing: a quiet "stop" passes', () => {
  // 12 dB under the agent, once the guard has heard half a second of the reply come back as nothing.
  const quiet = caller.map((x) => Math.round(x / 4));
  const { heard } = call({ gain: 0, delayMs: 80, words: quiet, atMs: 1000 });
  const span = concat(heard.slice(1000 / 20, (1000 + quiet.length / 16) / 20));
  assert.ok(rms(span) > rms(quiet) * 0.95, `${rms(span).toFixed(0)} of ${rms(quiet).toFixed(0)}`);
});

test('with nothing playing the guard does nothing', () => {
  const guard = new EchoGuard(16_000);
  guard.watch(new FakeAudioOut());
  const frame = caller.subarray(16_000, 16_320);
  assert.equal(guard.filter(frame), frame);
});

test('once the agent has stopped and its echo died away, the guard lets go', () => {
  // The reply lasts about 6.5 s; a quiet "stop" 1.5 s after it.
  const atMs = reply.length / 48 + 1500;
  const quiet = caller.map((x) => Math.round(x / 8));
  const { heard } = call({ gain: 0.316, delayMs: 80, words: quiet, atMs, durationMs: atMs + 2000 });
  const span = concat(heard.slice(atMs / 20, (atMs + quiet.length / 16) / 20));
  assert.ok(rms(span) > rms(quiet) * 0.95, `${rms(span).toFixed(0)} of ${rms(quiet).toFixed(0)}`);
});

test('audio an output does not count as queued is taken as played in real time', () => {
  const guard = new EchoGuard(16_000);
  // An output whose queue is always empty.
  const out = { write: () => {}, clear: () => 0, queuedMs: 0, onPlayback: () => () => {} };
  guard.watch(out).write(reply);
  let left = 0;
  for (let t = 0; t < 4000; t += 20) {
    const frame = new Int16Array(320);
    for (let i = 0; i < 320; i++) frame[i] = Math.round((reply[Math.round((t - 80) * 48 + i * 3)] ?? 0) * 0.316);
    const g = guard.filter(frame);
    if (t >= 600) left += rms(g);
  }
  assert.equal(left, 0, 'the echo, 3.4 s of it after the first half second, was all silenced');
});

/** A 400 Hz tone of `ms` at `amplitude`, at `rate`, from sample `from` of the tone on. */
function tone(ms: number, amplitude: number, rate: number, from = 0): Int16Array {
  const out = new Int16Array(Math.round((ms * rate) / 1000));
  for (let i = 0; i < out.length; i++) out[i] = Math.round(amplitude * Math.sin((2 * Math.PI * 400 * (from + i)) / rate));
  return out;
}

/**
 * The agent's `reply` (48 kHz) plays from 0; the caller's 20 ms frames (16 kHz, `caller(t)` for the
 * frame recorded at t ms) reach the guard in bursts of `burstMs`, each burst when its last frame was
 * recorded (as a WebSocket client's appends, or a jitter buffer catching up, bring them).
 */
function bursts(reply: Int16Array, caller: (tMs: number) => Int16Array, burstMs: number, durationMs: number): Int16Array[] {
  const out = new FakeAudioOut();
  const guard = new EchoGuard(16_000);
  guard.watch(out).write(reply);
  const heard: Int16Array[] = [];
  for (let t = 0; t < durationMs; t += burstMs) {
    out.play(burstMs);
    for (let f = t; f < t + burstMs; f += 20) heard.push(guard.filter(caller(f)));
  }
  return heard;
}

test('a burst of frames is placed by audio time: each frame is compared with the agent audio playing when it was recorded', () => {
  // 600 ms of the agent's voice, then silence; the caller's microphone hears it back 10 dB down, at
  // once (no delay), and nothing else. Delivered 500 ms at a time, the frames recorded in 500–600 ms
  // arrive at 1,000 ms, when the agent has been silent 400 ms: only their own time says they are echo.
  const reply = concat([tone(600, 8000, 48_000), new Int16Array(1400 * 48)]);
  const echo = (t: number) => (t < 600 ? tone(20, 8000 * 0.316, 16_000, t * 16) : new Int16Array(320));
  const heard = bursts(reply, echo, 500, 2000);
  const left = heard.slice(0, 600 / 20).map((f) => rms(f));
  assert.deepEqual(left, left.map(() => 0), 'every frame of the echo, the burst of 500–1,000 ms too, was silenced');
  // The same frames one by one, as they were recorded: the same outcome.
  assert.deepEqual(bursts(reply, echo, 20, 2000).slice(0, 30).map((f) => rms(f)), left);
});

test('a caller barging in at a reply’s start, delivered in a burst, passes: its frames are not compared with the reply’s louder later audio', () => {
  // The reply opens softly for 200 ms (−30 dBFS), then speaks up (−12 dBFS); the caller, at −20 dBFS,
  // speaks over its first 200 ms. Those frames arrive together at 400 ms, when the reply is loud.
  const reply = concat([tone(200, 1000, 48_000), tone(1800, 8000, 48_000, 200 * 48)]);
  const caller = (t: number) => (t < 200 ? tone(20, 3000, 16_000, t * 16) : new Int16Array(320));
  const heard = bursts(reply, caller, 400, 2000);
  const passed = heard.slice(0, 200 / 20).filter((f) => rms(f) > 2000).length;
  assert.equal(passed, 10, `${passed} of the caller's 10 frames reached the VAD`);
});

test('the first frames of a caller, arriving together and stamped with when each was recorded, each meet the agent audio playing then', () => {
  // As the second test, but the caller's audio starts with this burst (nothing came before it to
  // keep its clock): 600 ms of it arrives at 600 ms, each frame stamped by the transport.
  let now = 0;
  const out = new FakeAudioOut();
  const guard = new EchoGuard(16_000, () => now);
  guard.watch(out).write(concat([tone(200, 1000, 48_000), tone(1800, 8000, 48_000, 200 * 48)]));
  now = 600;
  out.play(600);
  const heard: Int16Array[] = [];
  for (let t = 0; t < 600; t += 20) heard.push(guard.filter(t < 200 ? tone(20, 3000, 16_000, t * 16) : new Int16Array(320), t + 20));
  const passed = heard.slice(0, 10).filter((f) => rms(f) > 2000).length;
  assert.equal(passed, 10, `${passed} of the caller's 10 frames reached the VAD`);
});
