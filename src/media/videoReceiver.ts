// The caller's camera in: RTP packets grouped into frames (by timestamp, closed by the marker bit),
// VP8 payload descriptors removed, H.264 NAL units unpacked into Annex-B (RFC 6184: single NAL
// units, STAP-A, FU-A), handed to the agent as encoded frames a decoder reads as they are.
import { RtpPacket, Vp8RtpPayload, isRtcp } from 'werift-rtp';

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

export class VideoReceiver {
  private readonly codecs: Map<number, VideoCodec['name']>;
  private parts: Buffer[] = [];
  private size = 0;
  private timestamp: number | undefined;
  private keyframe = false;
  frames = 0;

  constructor(
    codecs: VideoCodec[],
    private readonly onFrame: (frame: VideoFrameInfo) => void,
  ) {
    this.codecs = new Map(codecs.map((c) => [c.payloadType, c.name]));
  }

  handle(packet: Buffer): void {
    if (isRtcp(packet)) return;
    let rtp: RtpPacket;
    try {
      rtp = RtpPacket.deSerialize(packet);
    } catch {
      return;
    }
    const codec = this.codecs.get(rtp.header.payloadType);
    if (!codec) return;
    if (this.timestamp !== rtp.header.timestamp) this.reset(rtp.header.timestamp);
    let payload = rtp.payload;
    if (codec === 'VP8') {
      try {
        const vp8 = Vp8RtpPayload.deSerialize(rtp.payload);
        if (vp8.isPartitionHead && vp8.isKeyframe) this.keyframe = true;
        payload = vp8.payload;
      } catch {
        return;
      }
    } else if (codec === 'H264') {
      const unpacked = unpackH264(payload);
      if (!unpacked) return this.reset(undefined);
      if (unpacked.keyframe) this.keyframe = true;
      payload = unpacked.bytes;
    }
    this.size += payload.length;
    if (this.size > MAX_FRAME_BYTES) return this.reset(undefined);
    this.parts.push(payload);
    if (rtp.header.marker) {
      this.frames++;
      this.onFrame({ codec, payload: Buffer.concat(this.parts), timestamp: rtp.header.timestamp, keyframe: this.keyframe });
      this.reset(undefined);
    }
  }

  private reset(timestamp: number | undefined): void {
    this.parts = [];
    this.size = 0;
    this.keyframe = false;
    this.timestamp = timestamp;
  }
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
