// The end-of-turn rule on probabilities alone: windows of a given length and probability in, turn
// starts and stops out.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EndpointingPolicy, ROOM_SILENCE_MS, type EndpointEvent } from '../../src/agent/turn/endpointing.ts';

const options = { threshold: 0.5, prefixPaddingMs: 300, silenceMs: 300, maxTurnMs: 30_000 };

/** Runs `probabilities` as consecutive windows of `windowMs` and returns the events with their window index. */
function run(policy: EndpointingPolicy, probabilities: number[], windowMs = 32): [number, EndpointEvent][] {
  const out: [number, EndpointEvent][] = [];
  probabilities.forEach((p, i) => {
    const e = policy.step(p, i * windowMs, windowMs);
    if (e) out.push([i, e]);
  });
  return out;
}

const repeat = (p: number, n: number) => Array<number>(n).fill(p);

test('silence and low probabilities never start a turn', () => {
  assert.deepEqual(run(new EndpointingPolicy(options), [...repeat(0, 50), ...repeat(0.49, 50), ...repeat(0.3, 10)]), []);
});

test('a single speech-like window (a click) does not start a turn; 60 ms of speech does', () => {
  const policy = new EndpointingPolicy(options);
  assert.deepEqual(run(policy, [0, 0.9, 0, 0, 0.9, 0.2, 0]), []);
  assert.deepEqual(run(policy, [0, 0, 0.9, 0.9, 0.9]), [[3, { type: 'start', onsetMs: 64 }]]);
});

test('the turn ends when the silence after speech reaches silenceMs, timed from the first silent window', () => {
  const policy = new EndpointingPolicy(options);
  // Speech in windows 5..34, silence from window 35 (1120 ms): 300 ms is reached at the end of window 44 (1440 ms).
  const events = run(policy, [...repeat(0, 5), ...repeat(0.95, 30), ...repeat(0.01, 20)]);
  assert.deepEqual(events, [
    [6, { type: 'start', onsetMs: 160 }],
    [44, { type: 'stop', endMs: 1440, speechEndMs: 1120, reason: 'silence' }],
  ]);
});

test('pauses shorter than silenceMs do not end the turn', () => {
  const policy = new EndpointingPolicy(options);
  const speechWithPauses = [...repeat(0.9, 20), ...repeat(0.05, 8), ...repeat(0.9, 20), ...repeat(0.1, 9), ...repeat(0.9, 5)];
  const events = run(policy, [...speechWithPauses, ...repeat(0, 10)]);
  assert.deepEqual(events.map(([, e]) => e.type), ['start', 'stop']);
  assert.equal(events[1]![0], speechWithPauses.length + 9, 'only the final silence ends it');
});

test('probabilities between threshold − 0.15 and threshold neither start the silence nor break it', () => {
  const policy = new EndpointingPolicy(options);
  // In the hysteresis band (0.4) right after speech: no silence is counted, however long.
  const held = run(policy, [...repeat(0.9, 5), ...repeat(0.4, 30)]);
  assert.deepEqual(held.map(([, e]) => e.type), ['start']);
  // Once silence began (0.1), band windows keep it running: 3 + 7 windows of 32 ms reach 300 ms.
  const ended = run(policy, [...repeat(0.1, 3), ...repeat(0.4, 7)]);
  assert.deepEqual(ended.map(([i, e]) => [i, e.type]), [[9, 'stop']]);
});

test('a turn reaching maxTurnMs ends, and continued speech starts the next one', () => {
  const policy = new EndpointingPolicy({ ...options, maxTurnMs: 1000 });
  const events = run(policy, repeat(0.9, 70), 20);
  assert.deepEqual(
    events.map(([i, e]) => [i, e.type, e.type === 'stop' ? e.reason : '']),
    [[2, 'start', ''], [49, 'stop', 'max_length'], [52, 'start', '']],
  );
});

test('configure() applies at once: a shorter silence ends a turn already that long in silence', () => {
  const policy = new EndpointingPolicy({ ...options, silenceMs: 1000 });
  assert.deepEqual(run(policy, [...repeat(0.9, 10), ...repeat(0, 15)]).map(([, e]) => e.type), ['start']);
  policy.configure({ silenceMs: 200 });
  assert.deepEqual(policy.step(0, 25 * 32, 32), { type: 'stop', endMs: 26 * 32, speechEndMs: 10 * 32, reason: 'silence' });
  // A higher threshold: 0.6 is no longer speech.
  policy.configure({ threshold: 0.7, silenceMs: undefined });
  assert.equal(policy.settings.silenceMs, 200, 'undefined leaves a setting as it was');
  assert.deepEqual(run(policy, repeat(0.6, 10)), []);
});

test('reset() forgets the open turn without a stop', () => {
  const policy = new EndpointingPolicy(options);
  run(policy, repeat(0.9, 5));
  assert.equal(policy.inTurn, true);
  policy.reset();
  assert.equal(policy.inTurn, false);
  assert.deepEqual(run(policy, repeat(0, 20)), []);
});

test('with pauseMs, a silence that long inside a turn is reported once, and speech after it as a resume', () => {
  const policy = new EndpointingPolicy({ ...options, pauseMs: 96 });
  const events = run(policy, [...repeat(0.9, 5), ...repeat(0, 4), ...repeat(0.9, 3), ...repeat(0, 12)]);
  assert.deepEqual(events, [
    [1, { type: 'start', onsetMs: 0 }],
    [7, { type: 'pause', silenceStartMs: 160 }],
    [9, { type: 'resume' }],
    [14, { type: 'pause', silenceStartMs: 384 }],
    [21, { type: 'stop', endMs: 704, speechEndMs: 384, reason: 'silence' }],
  ]);
});

/** Runs windows of [probability, level dBFS] and returns the events with their window index. */
function runLevels(policy: EndpointingPolicy, windows: [number, number][], windowMs = 32): [number, EndpointEvent][] {
  const out: [number, EndpointEvent][] = [];
  windows.forEach(([p, db], i) => {
    const e = policy.step(p, i * windowMs, windowMs, db);
    if (e) out.push([i, e]);
  });
  return out;
}

const windowsOf = (p: number, db: number, n: number) => Array.from({ length: n }, () => [p, db] as [number, number]);

test("in a noisy room, a turn ends ROOM_SILENCE_MS after the caller's voice though the VAD goes on hearing speech in the room", () => {
  // A second of babble at −40 dBFS judged not speech, the caller at −25 dBFS, then babble at −39 dBFS that the
  // VAD scores 0.7: alone, the probabilities would hold the turn open as long as the babble lasts.
  const windows = [...windowsOf(0.2, -40, 31), ...windowsOf(0.95, -25, 30), ...windowsOf(0.7, -39, 40)];
  const events = runLevels(new EndpointingPolicy(options), windows);
  assert.equal(ROOM_SILENCE_MS, 800);
  assert.deepEqual(events, [
    [32, { type: 'start', onsetMs: 992 }],
    [85, { type: 'stop', endMs: 2752, speechEndMs: 1952, reason: 'silence' }],
  ]);
  assert.equal(runLevels(new EndpointingPolicy(options), windows.map(([p]) => [p, undefined as unknown as number])).length, 1, 'without levels the turn stays open');
});

test('speech the VAD hears in the room at the room’s level starts no turn; the caller above it does', () => {
  const windows = [...windowsOf(0.2, -40, 31), ...windowsOf(0.8, -38, 20), ...windowsOf(0.95, -25, 5)];
  assert.deepEqual(runLevels(new EndpointingPolicy(options), windows), [[52, { type: 'start', onsetMs: 1632 }]]);
});

test('in a noisy room a pause shorter than ROOM_SILENCE_MS, with the room heard as speech, keeps the turn; silence still ends it at silenceMs', () => {
  const windows = [...windowsOf(0.2, -40, 31), ...windowsOf(0.95, -25, 20), ...windowsOf(0.7, -39, 15), ...windowsOf(0.95, -26, 10), ...windowsOf(0.01, -41, 12)];
  const events = runLevels(new EndpointingPolicy(options), windows);
  assert.deepEqual(events.map(([i, e]) => [i, e.type]), [[32, 'start'], [85, 'stop']]);
});

test('in a quiet room the levels change nothing: a soft syllable the VAD still hears keeps the turn', () => {
  const windows = [...windowsOf(0.01, -100, 31), ...windowsOf(0.95, -25, 20), ...windowsOf(0.6, -60, 15), ...windowsOf(0.95, -25, 10), ...windowsOf(0.01, -100, 12)];
  const events = runLevels(new EndpointingPolicy(options), windows);
  assert.deepEqual(events.map(([i, e]) => [i, e.type]), [[32, 'start'], [85, 'stop']]);
});

test("speech louder than the room keeps the turn even where the VAD's probability dips into its hysteresis", () => {
  const windows = [...windowsOf(0.1, -40, 31), ...windowsOf(0.95, -25, 20), ...windowsOf(0.4, -30, 15), ...windowsOf(0.95, -25, 5)];
  const events = runLevels(new EndpointingPolicy(options), windows);
  assert.deepEqual(events.map(([i, e]) => [i, e.type]), [[32, 'start']]);
});
