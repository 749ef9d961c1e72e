// The recordings' Ogg Opus writer: Ogg's CRC, the page header (flags, granule positions, lacing),
// and a stream of real stereo Opus packets that opusinfo accepts and opusdec decodes.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Encoder } from '@evan/opus';
import { OggOpusStream, oggCrc32, oggPage } from '../../src/recordings/oggOpus.ts';

interface ParsedPage {
  flags: number;
  granule: bigint;
  sequence: number;
  serial: number;
  segments: number[];
  crcOk: boolean;
  length: number;
}

/** Reads the pages of an Ogg file as a demuxer would, checking each CRC. */
function pages(file: Buffer): ParsedPage[] {
  const out: ParsedPage[] = [];
  for (let at = 0; at < file.length; ) {
    assert.equal(file.toString('latin1', at, at + 4), 'OggS', `a page starts at ${at}`);
    const count = file[at + 26]!;
    const segments = [...file.subarray(at + 27, at + 27 + count)];
    const length = 27 + count + segments.reduce((a, b) => a + b, 0);
    const page = Buffer.from(file.subarray(at, at + length));
    const crc = page.readUInt32LE(22);
    page.writeUInt32LE(0, 22);
    out.push({ flags: page[5]!, granule: page.readBigInt64LE(6), serial: page.readUInt32LE(14), sequence: page.readUInt32LE(18), segments, crcOk: oggCrc32(page) === crc, length });
    at += length;
  }
  return out;
}

test("Ogg's CRC-32 is the unreflected 0x04c11db7 one with no initial value nor final XOR", () => {
  // CRC-32/POSIX's check value 0x765e7680 without its final XOR.
  assert.equal(oggCrc32(Buffer.from('123456789')), 0x89a1897f);
  assert.equal(oggCrc32(Buffer.alloc(0)), 0);
});

test('a page: flags, granule, serial, sequence, lacing (255 + remainder, a 0 when it divides) and a CRC over it all', () => {
  const page = oggPage({ packets: [Buffer.alloc(300, 1), Buffer.alloc(255, 2)], granulePosition: 1920n, serial: 0xdeadbeef, sequence: 7, first: true, last: true });
  const [parsed] = pages(page);
  assert.deepEqual(parsed, { flags: 0x06, granule: 1920n, sequence: 7, serial: 0xdeadbeef, segments: [255, 45, 255, 0], crcOk: true, length: page.length });
  assert.throws(() => oggPage({ packets: [Buffer.alloc(255 * 255)], granulePosition: 0n, serial: 1, sequence: 0 }), RangeError);
});

test('a stereo stream: header pages alone with granule 0, a page a second of 20 ms packets, the end flagged; opusinfo accepts it and opusdec decodes two channels', () => {
  const encoder = new Encoder({ channels: 2, sample_rate: 48_000, application: 'voip' });
  const stream = new OggOpusStream(960);
  const chunks: Buffer[] = stream.headers(2, 312, 'Parley test', ['TITLE=tone']);
  // 2.5 s: a 440 Hz tone on the left, silence on the right.
  for (let f = 0; f < 125; f++) {
    const stereo = new Int16Array(1920);
    for (let i = 0; i < 960; i++) stereo[2 * i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * (f * 960 + i)) / 48_000));
    const page = stream.packet(Buffer.from(encoder.encode(stereo)));
    if (page) chunks.push(page);
  }
  chunks.push(stream.end());
  const file = Buffer.concat(chunks);

  const parsed = pages(file);
  assert.ok(parsed.every((p) => p.crcOk));
  assert.deepEqual(parsed.map((p) => p.sequence), parsed.map((_, i) => i));
  assert.ok(parsed.every((p) => p.serial === parsed[0]!.serial));
  assert.deepEqual(parsed.map((p) => p.flags), [0x02, 0, 0, 0, 0x04]);
  assert.deepEqual(parsed.map((p) => p.granule), [0n, 0n, 50n * 960n, 100n * 960n, 125n * 960n]);
  assert.equal(file.toString('latin1', 28, 36), 'OpusHead');
  assert.equal(file[28 + 9], 2, 'two channels');
  assert.equal(file.readUInt16LE(28 + 10), 312, 'pre-skip');
  assert.equal(file[28 + 18], 0, 'mapping family 0');

  const dir = mkdtempSync(join(tmpdir(), 'parley-ogg-'));
  try {
    writeFileSync(join(dir, 'tone.opus'), file);
    const info = execFileSync('opusinfo', [join(dir, 'tone.opus')], { encoding: 'utf8' });
    assert.match(info, /Channels: 2/);
    assert.match(info, /Pre-skip: 312/);
    assert.doesNotMatch(info, /WARNING|ERROR/i);
    execFileSync('opusdec', ['--quiet', '--rate', '48000', join(dir, 'tone.opus'), join(dir, 'tone.wav')]);
    const wav = readFileSync(join(dir, 'tone.wav'));
    assert.equal(wav.readUInt16LE(22), 2, 'decoded to two channels');
    const pcm = new Int16Array(wav.buffer.slice(wav.byteOffset + 44));
    assert.equal(pcm.length / 2, 125 * 960 - 312, 'the duration less the pre-skip');
    let left = 0;
    let right = 0;
    for (let i = 0; i < pcm.length; i += 2) {
      left += pcm[i]! ** 2;
      right += pcm[i + 1]! ** 2;
    }
    assert.ok(Math.sqrt(left / (pcm.length / 2)) > 3000, 'the tone is on the left');
    assert.ok(Math.sqrt(right / (pcm.length / 2)) < 300, 'the right is quiet');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
