// The caller's camera in: RTP packets grouped into frames (by timestamp, closed by the marker bit),
// VP8 payload descriptors removed, H.264 NAL units unpacked into Annex-B (RFC 6184: single NAL
// units, STAP-A, FU-A), handed to the agent as encoded frames a decoder reads as they are.
import { isRtcp } from 'werift-rtp';

/** A video codec the offer names, with its payload type. */
export interface VideoCodec {
  payloadType: number;
  name: 'VP8' | 'H264';
}

export interface VideoFrameInfo {
  codec: VideoCodec['name'];
  /** The frame as received (depacketised payload: VP8 as is, H.264 in Annex-B), for agents that decode it. */
  payload: Buffer;
  timestamp: number;
  keyframe: boolean;
}

const MAX_FRAME_BYTES = 2 * 1024 * 1024;
const EMPTY = Buffer.alloc(0);

/**
 * Frames in; by default only key frames keep their bytes (a delta frame is told, with an empty
 * payload): what the agent decodes is one key frame at a time, and a camera between turns then
 * costs a header read per packet, not a copy of the stream. `allFrames`: every frame's bytes.
 */
export class VideoReceiver {
  private readonly codecs: Map<number, VideoCodec['name']>;
  private parts: Buffer[] = [];
  private size = 0;
  private timestamp: number | undefined;
  private keyframe = false;
  /** This frame's bytes are not kept (a delta frame, or one past the size bound). */
  private skipping = false;
  private started = false;
  frames = 0;

  constructor(
    codecs: VideoCodec[],
    private readonly onFrame: (frame: VideoFrameInfo) => void,
    private readonly allFrames = false,
  ) {
    this.codecs = new Map(codecs.map((c) => [c.payloadType, c.name]));
  }

  handle(packet: Buffer): void {
    if (isRtcp(packet)) return;
    const rtp = readRtp(packet);
    if (!rtp) return;
    const codec = this.codecs.get(rtp.payloadType);
    if (!codec) return;
    if (this.timestamp !== rtp.timestamp) this.reset(rtp.timestamp);
    let payload = rtp.payload;
    if (codec === 'VP8') {
      const vp8 = readVp8(payload);
      if (!vp8) return;
      if (vp8.frameStart) {
        this.started = true;
        this.keyframe = vp8.keyframe;
        this.skipping = !vp8.keyframe && !this.allFrames;
      }
      payload = vp8.payload;
    } else if (codec === 'H264' && !this.skipping) {
      const unpacked = unpackH264(payload);
      if (!unpacked) {
        this.skipping = true;
      } else {
        this.started = true;
        if (unpacked.keyframe) this.keyframe = true;
        payload = unpacked.bytes;
      }
    }
    if (!this.skipping) {
      this.size += payload.length;
      if (this.size > MAX_FRAME_BYTES) {
        this.skipping = true;
        this.parts = [];
      } else this.parts.push(payload);
    }
    if (rtp.marker) {
      this.frames++;
      // H.264 frames are judged on their last packet: a frame with no IDR or SPS keeps nothing either.
      const keep = !this.skipping && this.started && (this.keyframe || this.allFrames);
      this.onFrame({ codec, payload: keep ? Buffer.concat(this.parts) : EMPTY, timestamp: rtp.timestamp, keyframe: keep && this.keyframe });
      this.reset(undefined);
    }
  }

  private reset(timestamp: number | undefined): void {
    this.parts = [];
    this.size = 0;
    this.keyframe = false;
    this.skipping = false;
    this.started = false;
    this.timestamp = timestamp;
  }
}

/** An RTP packet's header fields and payload (RFC 3550), read in place; undefined when malformed. */
export function readRtp(packet: Buffer): { payloadType: number; marker: boolean; timestamp: number; payload: Buffer } | undefined {
  if (packet.length < 12 || packet[0]! >> 6 !== 2) return undefined;
  let at = 12 + (packet[0]! & 0x0f) * 4;
  if (packet[0]! & 0x10) {
    if (packet.length < at + 4) return undefined;
    at += 4 + packet.readUInt16BE(at + 2) * 4;
  }
  let end = packet.length;
  if (packet[0]! & 0x20) end -= packet[packet.length - 1]!;
  if (at > end) return undefined;
  return { payloadType: packet[1]! & 0x7f, marker: (packet[1]! & 0x80) !== 0, timestamp: packet.readUInt32BE(4), payload: packet.subarray(at, end) };
}

/** A VP8 RTP payload (RFC 7741): its descriptor read, the frame's bytes after it. */
export function readVp8(payload: Buffer): { frameStart: boolean; keyframe: boolean; payload: Buffer } | undefined {
  if (payload.length < 1) return undefined;
  const first = payload[0]!;
  let at = 1;
  if (first & 0x80) {
    if (payload.length < 2) return undefined;
    const x = payload[1]!;
    at = 2;
    if (x & 0x80) at += payload[at] !== undefined && payload[at]! & 0x80 ? 2 : 1; // PictureID, 7 or 15 bits
    if (x & 0x40) at += 1; // TL0PICIDX
    if (x & 0x30) at += 1; // TID / KEYIDX
  }
  if (at >= payload.length) return undefined;
  const frameStart = (first & 0x10) !== 0 && (first & 0x0f) === 0;
  // The VP8 frame tag's first bit (the payload header's P): 0 on a key frame.
  const keyframe = frameStart && (payload[at]! & 0x01) === 0;
  return { frameStart, keyframe, payload: payload.subarray(at) };
}

const START_CODE = Buffer.from([0, 0, 0, 1]);

/**
 * One H.264 RTP payload as Annex-B bytes (RFC 6184): a single NAL unit or each unit of a STAP-A gets
 * a start code; a FU-A's first fragment gets one and the unit's header back, later ones add their
 * bytes. `keyframe`: it carries an IDR slice or a sequence parameter set. Undefined: not H.264.
 */
export function unpackH264(payload: Buffer): { bytes: Buffer; keyframe: boolean } | undefined {
  if (payload.length < 1) return undefined;
  const type = payload[0]! & 0x1f;
  const isKey = (t: number) => t === 5 || t === 7;
  if (type >= 1 && type <= 23) return { bytes: Buffer.concat([START_CODE, payload]), keyframe: isKey(type) };
  if (type === 24) {
    const parts: Buffer[] = [];
    let keyframe = false;
    let at = 1;
    while (at + 2 <= payload.length) {
      const size = payload.readUInt16BE(at);
      at += 2;
      if (size === 0 || at + size > payload.length) return undefined;
      const nal = payload.subarray(at, at + size);
      keyframe ||= isKey(nal[0]! & 0x1f);
      parts.push(START_CODE, nal);
      at += size;
    }
    return { bytes: Buffer.concat(parts), keyframe };
  }
  if (type === 28) {
    if (payload.length < 2) return undefined;
    const fu = payload[1]!;
    const inner = fu & 0x1f;
    const start = (fu & 0x80) !== 0;
    const rest = payload.subarray(2);
    if (!start) return { bytes: rest, keyframe: false };
    const header = Buffer.from([(payload[0]! & 0xe0) | inner]);
    return { bytes: Buffer.concat([START_CODE, header, rest]), keyframe: isKey(inner) };
  }
  return undefined;
}
