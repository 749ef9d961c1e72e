// Opus for one mono 48 kHz voice stream (libopus through @evan/opus's native binding).
import { Decoder, Encoder } from '@evan/opus';
import { SAMPLE_RATE } from './audio/format.js';

export interface OpusEncoderOptions {
  bitrate?: number;
  /**
   * libopus's speed/quality trade-off, 0–10. Encoding is most of a call's CPU: at 9 (libopus's
   * default, and libwebrtc's on desktops) it costs ≈ 1.8× what it costs at 5 (libwebrtc's on phones).
   * A function is asked before each frame: the node lowers it under load (EncoderComplexity).
   */
  complexity?: number | (() => number);
}

export const DEFAULT_OPUS_COMPLEXITY = 5;

export class OpusFrameEncoder {
  private readonly encoder = new Encoder({ channels: 1, sample_rate: SAMPLE_RATE, application: 'voip' });
  private readonly complexity: () => number;
  private applied: number;

  constructor({ bitrate = 32_000, complexity = DEFAULT_OPUS_COMPLEXITY }: OpusEncoderOptions = {}) {
    this.encoder.bitrate = bitrate;
    this.complexity = typeof complexity === 'function' ? complexity : () => complexity;
    this.applied = this.complexity();
    this.encoder.complexity = this.applied as Encoder['complexity'];
    // In-band FEC lets a browser rebuild a lost packet from the next one.
    this.encoder.inband_fec = true;
    this.encoder.packet_loss = 5;
  }

  /** Encodes one 20 ms frame (960 samples). */
  encode(frame: Int16Array): Buffer {
    const complexity = this.complexity();
    if (complexity !== this.applied) {
      this.applied = complexity;
      this.encoder.complexity = complexity as Encoder['complexity'];
    }
    const out = this.encoder.encode(frame);
    return Buffer.from(out.buffer, out.byteOffset, out.byteLength);
  }
}

export class OpusFrameDecoder {
  private readonly decoder = new Decoder({ channels: 1, sample_rate: SAMPLE_RATE });

  /** Decodes one Opus packet to PCM (any duration the packet carries); null if it is not valid Opus. */
  decode(packet: Uint8Array): Int16Array | null {
    let bytes: Uint8Array;
    try {
      bytes = this.decoder.decode(packet);
    } catch {
      return null;
    }
    // The binding returns a fresh copy of its output buffer (Uint8Array.slice), ours to keep.
    return bytes.byteOffset % 2 === 0
      ? new Int16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 1)
      : new Int16Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  }
}
