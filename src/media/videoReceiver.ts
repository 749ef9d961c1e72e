// The caller's camera in: RTP packets grouped into frames (by timestamp, closed by the marker bit),
// VP8 payload descriptors removed, handed to the agent as raw encoded frames.
import { RtpPacket, Vp8RtpPayload, isRtcp } from 'werift-rtp';

/** A video codec the offer names, with its payload type. */
export interface VideoCodec {
  payloadType: number;
  name: 'VP8' | 'H264';
}

export interface VideoFrameInfo {
  codec: VideoCodec['name'];
  /** The frame as received (depacketised payload), for agents that decode it. */
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
      const nalType = (payload[0] ?? 0) & 0x1f;
      const inner = nalType === 28 ? (payload[1] ?? 0) & 0x1f : nalType;
      if (inner === 5 || inner === 7) this.keyframe = true;
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
