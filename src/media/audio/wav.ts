// Reads the PCM out of a RIFF/WAVE byte stream (as espeak-ng and flite write it to stdout, where
// the sizes in the header may be placeholders).
export interface Pcm {
  sampleRate: number;
  samples: Int16Array;
}

export function readWav(bytes: Buffer): Pcm {
  if (bytes.length < 12 || bytes.toString('ascii', 0, 4) !== 'RIFF' || bytes.toString('ascii', 8, 12) !== 'WAVE') {
    throw new Error('not a WAV stream');
  }
  let offset = 12;
  let sampleRate = 0;
  while (offset + 8 <= bytes.length) {
    const id = bytes.toString('ascii', offset, offset + 4);
    const size = bytes.readUInt32LE(offset + 4);
    const body = offset + 8;
    if (id === 'fmt ') {
      if (bytes.readUInt16LE(body + 2) !== 1 || bytes.readUInt16LE(body + 14) !== 16) throw new Error('expected mono 16-bit PCM');
      sampleRate = bytes.readUInt32LE(body + 4);
    } else if (id === 'data') {
      // Placeholder sizes (streamed output) mean "to the end".
      const end = size === 0 || size === 0xffffffff || body + size > bytes.length ? bytes.length : body + size;
      const data = bytes.subarray(body, end - ((end - body) % 2));
      const samples = new Int16Array(data.length / 2);
      for (let i = 0; i < samples.length; i++) samples[i] = data.readInt16LE(i * 2);
      return { sampleRate, samples };
    }
    offset = body + size + (size % 2);
  }
  throw new Error('WAV stream has no data chunk');
}

/** A mono 16-bit PCM WAV file from PCM chunks. */
export function encodeWav(chunks: Int16Array[], sampleRate: number): Buffer {
  const samples = chunks.reduce((n, c) => n + c.length, 0);
  const out = Buffer.alloc(44 + samples * 2);
  out.write('RIFF', 0, 'ascii');
  out.writeUInt32LE(36 + samples * 2, 4);
  out.write('WAVEfmt ', 8, 'ascii');
  out.writeUInt32LE(16, 16);
  out.writeUInt16LE(1, 20);
  out.writeUInt16LE(1, 22);
  out.writeUInt32LE(sampleRate, 24);
  out.writeUInt32LE(sampleRate * 2, 28);
  out.writeUInt16LE(2, 32);
  out.writeUInt16LE(16, 34);
  out.write('data', 36, 'ascii');
  out.writeUInt32LE(samples * 2, 40);
  let offset = 44;
  for (const c of chunks) for (const s of c) offset = out.writeInt16LE(s, offset);
  return out;
}
