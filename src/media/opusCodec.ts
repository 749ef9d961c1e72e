// Opus for one mono 48 kHz voice stream (libopus through @evan/opus's native binding).
import { Decoder, Encoder } from '@evan/opus';
import { FRAME_SAMPLES, SAMPLE_RATE } from './audio/format.js';

export class OpusFrameEncoder {
  private readonly encoder = new Encoder({ channels: 1, sample_rate: SAMPLE_RATE, application: 'voip' });

  constructor(bitrate = 32_000) {
    this.encoder.bitrate = bitrate;
    // In-band FEC lets a browser rebuild a lost packet from the next one.
    this.encoder.inband_fec = true;
    this.encoder.packet_loss = 5;
  }

  /** Encodes one 20 ms frame (960 samples). */
  encode(frame: Int16Array): Buffer {
    const out = this.encoder.encode(frame);
    return Buffer.from(out.buffer, out.byteOffset, out.byteLength);
  }
}

export class OpusFrameDecoder {
  private readonly decoder = new Decoder({ channels: 1, sample_rate: SAMPLE_RATE });

  /** Decodes one Opus packet to PCM (any duration the packet carries); null if it is not valid Opus. */
  decode(packet: Buffer): Int16Array | null {
    try {
      const bytes = this.decoder.decode(packet);
      // Copy: the binding may reuse its output buffer.
      return new Int16Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
    } catch {
      return null;
    }
  }
}

export const SILENT_FRAME = new Int16Array(FRAME_SAMPLES);
