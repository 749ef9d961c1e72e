// Opus for one mono 48 kHz voice stream through the system's libopus (Debian's libopus0, called
// through koffi), with the settings of src/media/opusCodec.ts, to compare the two builds
// (bench/opus-builds.ts). Not used by the server: the bundled build is as fast (see bench/results/capacity.md).
import koffi from 'koffi';
import { FRAME_SAMPLES, SAMPLE_RATE } from '../../src/media/audio/format.ts';
import { DEFAULT_OPUS_COMPLEXITY, type OpusEncoderOptions } from '../../src/media/opusCodec.ts';

const OPUS_APPLICATION_VOIP = 2048;
const OPUS_SET_BITRATE = 4002;
const OPUS_SET_COMPLEXITY = 4010;
const OPUS_SET_INBAND_FEC = 4012;
const OPUS_SET_PACKET_LOSS_PERC = 4014;
/** The largest packet a 20 ms voice frame can make (RFC 6716 allows 1275 bytes per frame). */
const MAX_PACKET = 1275;
/** The longest packet's duration at 48 kHz (120 ms). */
const MAX_DECODED = 5760;

interface LibopusApi {
  encoderCreate: (rate: number, channels: number, application: number, error: number[]) => unknown;
  encoderCtl: (...args: unknown[]) => number;
  encode: (st: unknown, pcm: Int16Array, frameSize: number, out: Uint8Array, max: number) => number;
  encoderDestroy: (st: unknown) => void;
  decoderCreate: (rate: number, channels: number, error: number[]) => unknown;
  decode: (st: unknown, data: Uint8Array, len: number, pcm: Int16Array, frameSize: number, fec: number) => number;
  decoderDestroy: (st: unknown) => void;
}

let api: LibopusApi | undefined;

/** Loads the system libopus once; throws with the library's name when it is missing. */
export function libopus(): LibopusApi {
  if (api) return api;
  let lib: koffi.IKoffiLib;
  try {
    lib = koffi.load('libopus.so.0');
  } catch (err) {
    throw new Error(`the comparison needs the system's libopus (libopus.so.0, Debian package libopus0): ${(err as Error).message}`);
  }
  api = {
    encoderCreate: lib.func('void* opus_encoder_create(int32_t Fs, int channels, int application, _Out_ int* error)'),
    encoderCtl: lib.func('int opus_encoder_ctl(void* st, int request, ...)'),
    encode: lib.func('int32_t opus_encode(void* st, const int16_t* pcm, int frame_size, _Out_ uint8_t* data, int32_t max_data_bytes)'),
    encoderDestroy: lib.func('void opus_encoder_destroy(void* st)'),
    decoderCreate: lib.func('void* opus_decoder_create(int32_t Fs, int channels, _Out_ int* error)'),
    decode: lib.func('int opus_decode(void* st, const uint8_t* data, int32_t len, _Out_ int16_t* pcm, int frame_size, int decode_fec)'),
    decoderDestroy: lib.func('void opus_decoder_destroy(void* st)'),
  };
  return api;
}

/** libopus's native state, freed when its owner is collected. */
const encoders = new FinalizationRegistry<unknown>((st) => libopus().encoderDestroy(st));
const decoders = new FinalizationRegistry<unknown>((st) => libopus().decoderDestroy(st));

export class LibopusFrameEncoder {
  private readonly st: unknown;
  private readonly out = new Uint8Array(MAX_PACKET);

  constructor({ bitrate = 32_000, complexity = DEFAULT_OPUS_COMPLEXITY }: OpusEncoderOptions = {}) {
    const opus = libopus();
    const error = [0];
    this.st = opus.encoderCreate(SAMPLE_RATE, 1, OPUS_APPLICATION_VOIP, error);
    if (!this.st || error[0]) throw new Error(`opus_encoder_create failed (${error[0]})`);
    encoders.register(this, this.st);
    for (const [request, value] of [
      [OPUS_SET_BITRATE, bitrate],
      [OPUS_SET_COMPLEXITY, complexity],
      [OPUS_SET_INBAND_FEC, 1],
      [OPUS_SET_PACKET_LOSS_PERC, 5],
    ] as const) {
      const rc = opus.encoderCtl(this.st, request, 'int', value);
      if (rc !== 0) throw new Error(`opus_encoder_ctl(${request}) failed (${rc})`);
    }
  }

  /** Encodes one 20 ms frame (960 samples). The bytes are valid until the next call. */
  encode(frame: Int16Array): Buffer {
    const n = libopus().encode(this.st, frame, FRAME_SAMPLES, this.out, MAX_PACKET);
    if (n < 0) throw new Error(`opus_encode failed (${n})`);
    return Buffer.from(this.out.buffer, 0, n);
  }
}

export class LibopusFrameDecoder {
  private readonly st: unknown;
  private readonly pcm = new Int16Array(MAX_DECODED);

  constructor() {
    const error = [0];
    this.st = libopus().decoderCreate(SAMPLE_RATE, 1, error);
    if (!this.st || error[0]) throw new Error(`opus_decoder_create failed (${error[0]})`);
    decoders.register(this, this.st);
  }

  /** Decodes one Opus packet to PCM (a copy, the caller's to keep); null if it is not valid Opus. */
  decode(packet: Uint8Array): Int16Array | null {
    const n = libopus().decode(this.st, packet, packet.length, this.pcm, MAX_DECODED, 0);
    return n < 0 ? null : this.pcm.slice(0, n);
  }
}
