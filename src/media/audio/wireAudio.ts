// Audio carried inside events (a WebSocket session's input_audio_buffer.append and
// response.output_audio.delta): base64 of 16-bit little-endian PCM at 24 kHz, or of G.711 at 8 kHz.
import alawmulaw from 'alawmulaw';

/** Audio inside events: 16-bit little-endian PCM at 24 kHz, or G.711 μ-law / A-law at 8 kHz (OpenAI's audio/pcm, pcmu, pcma). */
export type AudioEncoding = 'pcm16' | 'pcmu' | 'pcma';

/** The sample rate each encoding is carried at. */
export const WIRE_RATE: Record<AudioEncoding, number> = { pcm16: 24_000, pcmu: 8_000, pcma: 8_000 };

/** Wire bytes → PCM samples at WIRE_RATE[encoding]. An odd trailing PCM byte is dropped. */
export function decodeWireAudio(bytes: Buffer, encoding: AudioEncoding): Int16Array {
  if (encoding === 'pcmu') return alawmulaw.mulaw.decode(bytes);
  if (encoding === 'pcma') return alawmulaw.alaw.decode(bytes);
  const samples = new Int16Array(bytes.length >> 1);
  for (let i = 0; i < samples.length; i++) samples[i] = bytes.readInt16LE(i * 2);
  return samples;
}

/** PCM samples at WIRE_RATE[encoding] → wire bytes. */
export function encodeWireAudio(pcm: Int16Array, encoding: AudioEncoding): Buffer {
  if (encoding === 'pcmu') return Buffer.from(alawmulaw.mulaw.encode(pcm));
  if (encoding === 'pcma') return Buffer.from(alawmulaw.alaw.encode(pcm));
  const bytes = Buffer.allocUnsafe(pcm.length * 2);
  for (let i = 0; i < pcm.length; i++) bytes.writeInt16LE(pcm[i]!, i * 2);
  return bytes;
}
