// The same Opus work through two builds of libopus: @evan/opus's bundled native binding (what the
// media path uses) and Debian's libopus0 called through koffi. Same frames (flite speech, 48 kHz
// mono, 20 ms), same settings as the media path (VoIP, 32 kbit/s, in-band FEC, 5 % loss), same
// complexity; CPU µs per frame for encoding and decoding, and what that is per talking call. Then
// the bundled build's encoder with the other ways to make it cheaper: a lower input rate (the TTS's
// own 16 or 24 kHz, no upsampling), a narrower coded band (SILK instead of CELT), lower complexity.
//
//   node --import tsx bench/opus-builds.ts                    # complexity 5, 60 s of speech, 3 rounds
//   flags: --complexity 5  --seconds 60  --rounds 3
import { parseArgs } from 'node:util';
import { Encoder } from '@evan/opus';
import { OpusFrameDecoder, OpusFrameEncoder } from '../src/media/opusCodec.ts';
import { speak } from '../test/helpers/speech.ts';
import { LibopusFrameDecoder, LibopusFrameEncoder } from './lib/libopus.ts';

const { values } = parseArgs({
  options: {
    complexity: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '60' },
    rounds: { type: 'string', default: '3' },
  },
});
const complexity = Number(values.complexity);
const seconds = Number(values.seconds);
const rounds = Number(values.rounds);

const TEXT = 'The quick brown fox jumps over the lazy dog. What time is it in Paris? Please tell me the weather for tomorrow morning.';
const speech = (rate = 48_000) => speak(TEXT, rate);

const clip = speech();
const FRAME = 960;
const frameCount = (seconds * 1000) / 20;
const frames = Array.from({ length: frameCount }, (_, i) => {
  const start = ((i * FRAME) % (clip.length - FRAME)) | 0;
  return clip.slice(start, start + FRAME);
});

interface Build {
  name: string;
  encoder: () => { encode(f: Int16Array): Uint8Array };
  decoder: () => { decode(p: Uint8Array): Int16Array | null };
}
const builds: Build[] = [
  { name: '@evan/opus (bundled native)', encoder: () => new OpusFrameEncoder({ complexity }), decoder: () => new OpusFrameDecoder() },
  { name: 'libopus0 (Debian) via koffi', encoder: () => new LibopusFrameEncoder({ complexity }), decoder: () => new LibopusFrameDecoder() },
];

function cpuUs(fn: () => void): number {
  const start = process.cpuUsage();
  fn();
  const used = process.cpuUsage(start);
  return used.user + used.system;
}

console.log(`complexity ${complexity}, ${seconds} s of speech (${frameCount} frames), best of ${rounds} rounds`);
console.log('| build | encode µs/frame | decode µs/frame | bytes/frame | % of a core per talking call (encode + decode) |');
console.log('|---|---:|---:|---:|---:|');
for (const build of builds) {
  let bestEnc = Infinity;
  let bestDec = Infinity;
  let bytes = 0;
  for (let r = 0; r < rounds; r++) {
    const enc = build.encoder();
    const packets: Uint8Array[] = [];
    bestEnc = Math.min(bestEnc, cpuUs(() => {
      for (const f of frames) packets.push(enc.encode(f).slice());
    }));
    bytes = packets.reduce((n, p) => n + p.length, 0) / packets.length;
    const dec = build.decoder();
    bestDec = Math.min(bestDec, cpuUs(() => {
      for (const p of packets) if (!dec.decode(p)) throw new Error('decode failed');
    }));
  }
  const encUs = bestEnc / frameCount;
  const decUs = bestDec / frameCount;
  // 50 frames a second each way.
  const pct = ((encUs + decUs) * 50) / 1e4;
  console.log(`| ${build.name} | ${encUs.toFixed(1)} | ${decUs.toFixed(1)} | ${bytes.toFixed(1)} | ${pct.toFixed(2)} |`);
}

console.log('\nThe bundled encoder, other settings (same speech, same bitrate, FEC and loss):');
console.log('| input rate | coded band | complexity | encode µs/frame | bytes/frame |');
console.log('|---:|---|---:|---:|---:|');
const variants: [number, 'auto' | 'wideband' | 'superwideband', number][] = [
  [48_000, 'auto', complexity], [48_000, 'superwideband', complexity], [48_000, 'wideband', complexity],
  [24_000, 'auto', complexity], [16_000, 'auto', complexity], [48_000, 'auto', 3], [48_000, 'auto', 1], [16_000, 'auto', 1],
];
for (const [rate, band, cx] of variants) {
  const source = speech(rate);
  const n = rate / 50;
  const input = Array.from({ length: frameCount }, (_, i) => {
    const start = ((i * n) % (source.length - n)) | 0;
    return source.slice(start, start + n);
  });
  let best = Infinity;
  let bytes = 0;
  for (let r = 0; r < rounds; r++) {
    const enc = new Encoder({ channels: 1, sample_rate: rate as 48_000, application: 'voip' });
    enc.bitrate = 32_000;
    enc.complexity = cx as Encoder['complexity'];
    enc.inband_fec = true;
    enc.packet_loss = 5;
    enc.max_bandwidth = band;
    let total = 0;
    best = Math.min(best, cpuUs(() => {
      for (const f of input) total += enc.encode(f).length;
    }));
    bytes = total / frameCount;
  }
  console.log(`| ${rate / 1000} kHz | ${band} | ${cx} | ${(best / frameCount).toFixed(1)} | ${bytes.toFixed(1)} |`);
}
