// The turn detector: 16 kHz frames in (48 kHz test audio as the transport converts it), turns out. A fake VAD (loudness as probability) checks the
// windowing, timestamps, preroll and ordering exactly; the WebRTC VAD checks synthetic non-speech
// (Silero and flite-spoken sentences: test/engines/vad.test.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { GatedVad } from '../../src/agent/turn/gate.ts';
import type { Vad } from '../../src/agent/turn/types.ts';
import { webrtcVadProvider } from '../../src/agent/turn/webrtc.ts';
import { downsample48kTo16k } from '../../src/media/audio/resample.ts';
import { concat, noise, rms, silence, tone } from '../helpers/pcm.ts';
import { detect, options, pushAll, record, type Event } from '../helpers/turnDetection.ts';
import { until } from '../helpers/wait.ts';

/** Loudness as probability: windows over RMS 500 are speech. Optionally answers later, in a random order of delays. */
function loudnessVad(windowSamples: number, opts: { async?: boolean; fail?: (n: number) => boolean } = {}): Vad & { closed: boolean; judged: number } {
  let n = 0;
  let seed = 7;
  const vad = {
    windowSamples,
    closed: false,
    judged: 0,
    probability(window: Int16Array): number | Promise<number> {
      assert.equal(window.length, windowSamples, 'whole windows only');
      const call = n++;
      const p = rms(window) > 500 ? 0.9 : 0.02;
      if (opts.fail?.(call)) {
        if (!opts.async) throw new Error('model exploded');
        return sleep(1).then(() => Promise.reject(new Error('model exploded')));
      }
      vad.judged++;
      if (!opts.async) return p;
      seed = (seed * 16807) % 2147483647;
      return sleep(seed % 3).then(() => p);
    },
    close() {
      vad.closed = true;
    },
  };
  return vad;
}

// 1 s silence, 1 s tone, 200 ms pause, 0.5 s tone, 1 s silence.
const speechLike = concat(silence(1000), tone(1000), silence(200), tone(500), silence(1000));

test('one turn with exact boundaries, whether the caller sends 20 ms or 10 ms packets', () => {
  for (const frameMs of [20, 10]) {
    const r = record(loudnessVad(512));
    pushAll(r.detector, speechLike, frameMs);
    // Onset: the first 32 ms window holding the tone starts at 992 ms; the handed-over audio 300 ms before.
    // End: the tone stops at 2700 ms, inside the window 2688–2720; 300 ms of silence from 2720 ms are
    // complete at the end of the window 3008–3040.
    assert.deepEqual(r.summary(), ['started@692', 'stopped@3040'], `${frameMs} ms frames`);
  }
});

test('the audio handed over is the 16 kHz call audio from audioStartMs on, without a gap: preroll, then the turn', () => {
  const r = record(loudnessVad(512));
  pushAll(r.detector, speechLike, 20);
  const started = r.events[0] as Extract<Event, { type: 'started' }>;
  assert.equal(started.preroll.length, 300 * 16, 'prefix padding of 300 ms');
  const handed = concat(...r.audio[0]!);
  const expected = downsample48kTo16k(speechLike).subarray(started.audioStartMs * 16, 3040 * 16);
  assert.equal(handed.length, expected.length);
  assert.deepEqual(handed, expected);
});

test('a pause shorter than the silence duration keeps one turn; longer makes two', () => {
  const r = record(loudnessVad(320), { ...options, silenceMs: 150 });
  pushAll(r.detector, speechLike, 20);
  // The 200 ms pause (2000–2200 ms) ends the first turn at 2160 ms; the second turn's padding does not
  // reach back into the first turn, so its audio starts where the first ended.
  assert.deepEqual(r.summary(), ['started@700', 'stopped@2160', 'started@2160', 'stopped@2860']);
});

test('an asynchronous VAD answering out of time still yields the same turns, in order', async () => {
  const sync = record(loudnessVad(512));
  pushAll(sync.detector, speechLike, 10);
  const vad = loudnessVad(512, { async: true });
  const r = record(vad);
  pushAll(r.detector, speechLike, 10);
  await until('every window judged', () => vad.judged, (n) => n === Math.floor((speechLike.length / 3) / 512));
  await until('the turn ended', () => r.events.length, (n) => n === 2);
  assert.deepEqual(r.summary(), sync.summary());
  assert.deepEqual(concat(...r.audio[0]!), concat(...sync.audio[0]!));
});

test('configure() changes the endpointing live', () => {
  const r = record(loudnessVad(512));
  pushAll(r.detector, concat(silence(500), tone(500)), 20);
  r.detector.configure({ silenceMs: 1500 });
  pushAll(r.detector, concat(silence(1000), tone(300), silence(2000)), 20);
  assert.deepEqual(r.summary().map((s) => s.split('@')[0]), ['started', 'stopped'], 'the 1 s pause did not end the turn');
  r.detector.configure({ threshold: 0.95 });
  pushAll(r.detector, concat(tone(1000), silence(1000)), 20);
  assert.equal(r.events.length, 2, 'probability 0.9 is no longer speech');
});

test('reset() drops the turn in progress without a stop; the next speech is a new turn', () => {
  const r = record(loudnessVad(512));
  pushAll(r.detector, concat(silence(500), tone(500)), 20);
  r.detector.reset();
  pushAll(r.detector, concat(silence(1000), tone(500), silence(1000)), 20);
  assert.deepEqual(r.summary().map((s) => s.split('@')[0]), ['started', 'started', 'stopped']);
});

test('a turn longer than maxTurnMs is ended', () => {
  const r = record(loudnessVad(512), { ...options, maxTurnMs: 2000 });
  pushAll(r.detector, concat(silence(500), tone(5000)), 20);
  assert.deepEqual(r.summary().map((s) => s.split('@')[0]), ['started', 'stopped', 'started', 'stopped', 'started']);
});

test('a failing VAD is reported once per streak and its windows count as silence, ending the turn', async () => {
  for (const async of [false, true]) {
    // The tone runs from window 31 to 125; windows 40–79 fail, then the VAD recovers.
    const vad = loudnessVad(512, { async, fail: (n) => n >= 40 && n < 80 });
    const r = record(vad);
    pushAll(r.detector, concat(silence(1000), tone(3000)), 20);
    await until('every window judged', () => vad.judged, (n) => n === 125 - 40);
    assert.deepEqual(r.summary().map((s) => s.split('@')[0]), ['started', 'error:model exploded', 'stopped', 'started'], async ? 'async' : 'sync');
  }
});

test('close() closes the VAD, after a window it is still judging', async () => {
  const vad = loudnessVad(512, { async: true });
  const r = record(vad);
  pushAll(r.detector, silence(100), 20);
  r.detector.close();
  r.detector.push(downsample48kTo16k(tone(20)));
  await until('VAD closed', () => vad.closed, (c) => c);
  assert.equal(vad.judged, 1, 'no window judged after close');
});

test('WebRTC VAD hears no turn in silence or faint noise', async () => {
  for (const [name, pcm] of [
    ['silence', silence(3000)],
    ['faint white noise', noise(3000, 100)],
  ] as const) {
    assert.deepEqual((await detect(await webrtcVadProvider(2).create(), pcm)).summary(), [], name);
  }
});

test('the gate: the costly VAD judges from the first voiced frame until the hangover after the last, silence is 0 unjudged', () => {
  // Windows of 512 samples (32 ms); the gate calls a frame voiced when its first sample is non-zero.
  let inner = 0;
  const skipped: number[] = [];
  const costly: Vad = {
    windowSamples: 512,
    probability: () => (inner++, 0.9),
    skip: (w) => skipped.push(w[0]!),
    close: () => {},
  };
  const gate = { isSpeech: (f: Int16Array) => f[0] !== 0, close: () => {} };
  const vad = new GatedVad(costly, gate, 100); // 100 ms: 4 windows after the last voiced one
  const window = (loud: boolean, mark = 0) => {
    const w = new Int16Array(512);
    w[0] = loud ? 1000 : mark;
    return w;
  };
  const ps = [
    ...Array.from({ length: 3 }, () => vad.probability(window(false))),
    vad.probability(window(true)),
    ...Array.from({ length: 6 }, () => vad.probability(window(false))),
  ];
  assert.deepEqual(ps, [0, 0, 0, 0.9, 0.9, 0.9, 0.9, 0.9, 0, 0]);
  assert.equal(inner, 5);
  assert.deepEqual([vad.judged, vad.skipped, skipped.length], [5, 5, 5]);
  // A sound in a window's last 20 ms opens it too.
  const late = new Int16Array(512);
  late[512 - 320] = 1000;
  assert.equal(vad.probability(late), 0.9);
});
