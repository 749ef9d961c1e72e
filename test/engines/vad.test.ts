// The real VADs on real speech: Silero hears no turn in silence, noise or tones; Silero, the WebRTC
// VAD and Silero behind the gate each hear a flite-spoken sentence with pauses as one turn with the
// right boundaries; Silero's windows judged at once as in order; the gate moves no boundary.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GatedVad, gatedVadProvider } from '../../src/agent/turn/gate.ts';
import { sileroVadProvider } from '../../src/agent/turn/silero.ts';
import { webrtcVadProvider } from '../../src/agent/turn/webrtc.ts';
import { downsample48kTo16k } from '../../src/media/audio/resample.ts';
import { concat, frames, noise, rms, silence, tone } from '../helpers/pcm.ts';
import { speak } from '../helpers/speech.ts';
import { detect, options, type Event } from '../helpers/turnDetection.ts';

test('Silero hears no turn in silence, noise or steady tones', async () => {
  for (const [name, pcm] of [
    ['silence', silence(3000)],
    ['white noise', noise(3000, 2000)],
    ['a 440 Hz tone', tone(3000, 440)],
    ['a 1 kHz tone', tone(3000, 1000, 12000)],
  ] as const) {
    assert.deepEqual((await detect(await sileroVadProvider.create(), pcm)).summary(), [], name);
  }
});

/** Where the speech in `pcm` (48 kHz) begins and ends, ms: the first and last 10 ms over RMS 300. */
function speechBounds(pcm: Int16Array): [number, number] {
  const loud = frames(pcm, 10).map((f) => rms(f) > 300);
  return [loud.indexOf(true) * 10, (loud.lastIndexOf(true) + 1) * 10];
}

// Sentences whose commas make flite pause (up to ≈ 130 ms as Silero hears it).
const SENTENCES = [
  'Well, I think that, after all, the weather is quite nice today.',
  'One, two, three, four, five.',
  'Can you tell me, please, how far it is to the station, and when the next train leaves?',
];

for (const [name, provider] of [['Silero', sileroVadProvider], ['WebRTC VAD', webrtcVadProvider(2)], ['Silero behind the gate', gatedVadProvider(sileroVadProvider, 500)]] as const) {
  test(`${name}: a spoken sentence with pauses is one turn, from its onset (less the padding) to its end plus the silence`, async () => {
    for (const text of SENTENCES) {
      const pcm = concat(silence(1000), speak(text), silence(1500));
      const [begin, end] = speechBounds(pcm);
      const r = await detect(await provider.create(), pcm);
      assert.deepEqual(r.summary().map((s) => s.split('@')[0]), ['started', 'stopped'], `one turn: "${text}" (${r.summary().join(', ')})`);
      const started = (r.events[0] as Extract<Event, { type: 'started' }>).audioStartMs;
      const stopped = (r.events[1] as Extract<Event, { type: 'stopped' }>).audioEndMs;
      assert.ok(Math.abs(started + options.prefixPaddingMs - begin) <= 100, `onset ${started + options.prefixPaddingMs} ms near ${begin} ms: "${text}"`);
      // The VAD's probability falls some windows after the loud part ends (Silero ≈ 80–180 ms on these).
      assert.ok(stopped - options.silenceMs >= end && stopped - options.silenceMs <= end + 200, `end ${stopped} ms is ${end} ms + silence: "${text}"`);
    }
  });
}

test('Silero judges windows asked for all at once in order, as if one after another', async () => {
  const pcm = downsample48kTo16k(speak('hello there'));
  const windows = Array.from({ length: Math.floor(pcm.length / 512) }, (_, i) => pcm.slice(i * 512, (i + 1) * 512));
  const one = await sileroVadProvider.create();
  const sequential: number[] = [];
  for (const w of windows) sequential.push(await one.probability(w));
  const other = await sileroVadProvider.create();
  assert.deepEqual(await Promise.all(windows.map((w) => other.probability(w))), sequential);
  assert.ok(Math.max(...sequential) > 0.9, 'the speech is heard');
});

test('Silero behind the gate: the same turns as Silero alone, each boundary within one window; silence judged without the model', async () => {
  for (const text of [...SENTENCES, 'What time is it?']) {
    const pcm = concat(silence(2000), speak(text), silence(2000), speak('stop'), silence(1500));
    const alone = await detect(await sileroVadProvider.create(), pcm);
    const gated = (await gatedVadProvider(sileroVadProvider, 500).create()) as GatedVad;
    const behind = await detect(gated, pcm);
    assert.equal(alone.summary().length, 4, `two turns: ${alone.summary().join(', ')}`);
    assert.deepEqual(behind.summary().map((e) => e.split('@')[0]), alone.summary().map((e) => e.split('@')[0]), text);
    const at = (r: typeof alone, i: number) => Number(r.summary()[i]!.split('@')[1]);
    // The model did not run on the silence before an utterance, so its recurrent state enters the
    // utterance from another point: its probabilities differ a little, which may move a boundary by
    // one 32 ms window (either way), never more.
    for (const i of [0, 1, 2, 3]) assert.ok(Math.abs(at(behind, i) - at(alone, i)) <= 32, `${behind.summary()[i]} vs ${alone.summary()[i]}: "${text}"`);
    // The model ran around the speech only: of the 5.5 s of silence, all but the two 500 ms hangovers
    // (and a few windows at the edges, where the gate hears the voice's faint start and end) were skipped.
    assert.ok(gated.skipped * 32 >= 4000, `${gated.skipped} windows skipped, ${gated.judged} judged: "${text}"`);
  }
});
