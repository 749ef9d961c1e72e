// G.711 (PCMU / PCMA, 8 kHz) for phone calls, in the shape the RTP sender and receiver take a codec:
// the call's 48 kHz frames down to 8 kHz and encoded, and 8 kHz payloads decoded and brought up to 48 kHz.
import alawmulaw from 'alawmulaw';
import { SAMPLE_RATE } from './audio/format.js';
import { StreamResampler, frameConverter } from './audio/resample.js';
import type { FrameDecoder } from './audioReceiver.js';
import type { FrameEncoder } from './audioSender.js';

export type G711Law = 'pcmu' | 'pcma';

const RATE = 8000;

export function g711Encoder(law: G711Law): FrameEncoder {
  const down = frameConverter(SAMPLE_RATE, RATE);
  const encode = law === 'pcmu' ? alawmulaw.mulaw.encode : alawmulaw.alaw.encode;
  return { clockRate: RATE, encode: (frame) => encode(down(frame)) };
}

export function g711Decoder(law: G711Law): FrameDecoder {
  const up = new StreamResampler(RATE, SAMPLE_RATE);
  const decode = law === 'pcmu' ? alawmulaw.mulaw.decode : alawmulaw.alaw.decode;
  // Every byte is a sample: any payload decodes.
  return { clockRate: RATE, decode: (payload) => up.push(decode(payload)) };
}
