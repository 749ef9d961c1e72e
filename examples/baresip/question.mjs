// A WAV file for baresip's microphone (examples/baresip/config): a spoken question between
// silences, 8 kHz 16-bit mono, as G.711 carries it. The silence after the question leaves time
// for the agent's answer: baresip hangs up when the file ends.
//   node examples/baresip/question.mjs [OUT.wav] [QUESTION] [SECONDS AFTER]
// Speech by flite's 8 kHz voice (Debian's flite, which Parley's setup installs).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const [out = 'data/question.wav', question = 'what time is it', after = '15'] = process.argv.slice(2);
const RATE = 8000;

const dir = mkdtempSync(join(tmpdir(), 'question-'));
execFileSync('flite', ['-voice', 'kal', '-t', question, '-o', join(dir, 'speech.wav')]);
const wav = readFileSync(join(dir, 'speech.wav'));
rmSync(dir, { recursive: true });
// The samples: the 'data' chunk of flite's WAV (16-bit mono at 8 kHz, the kal voice's rate).
let at = 12;
while (wav.toString('ascii', at, at + 4) !== 'data') at += 8 + wav.readUInt32LE(at + 4);
const speech = wav.subarray(at + 8, at + 8 + wav.readUInt32LE(at + 4));

const silence = (seconds) => Buffer.alloc(Math.round(seconds * RATE) * 2);
const samples = Buffer.concat([silence(1), speech, silence(Number(after))]);
const header = Buffer.alloc(44);
header.write('RIFF', 0, 'ascii');
header.writeUInt32LE(36 + samples.length, 4);
header.write('WAVEfmt ', 8, 'ascii');
header.writeUInt32LE(16, 16);
header.writeUInt16LE(1, 20); // PCM
header.writeUInt16LE(1, 22); // mono
header.writeUInt32LE(RATE, 24);
header.writeUInt32LE(RATE * 2, 28);
header.writeUInt16LE(2, 32);
header.writeUInt16LE(16, 34);
header.write('data', 36, 'ascii');
header.writeUInt32LE(samples.length, 40);
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, Buffer.concat([header, samples]));
console.log(`${out}: "${question}", ${(samples.length / 2 / RATE).toFixed(1)} s`);
