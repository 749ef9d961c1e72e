// The caller's voice in: SRTP-decrypted RTP from the stack → reordering buffer → Opus decode →
// 20 ms PCM frames for the agent, with the reception statistics RTCP reports need. Packets may
// carry any duration Opus allows (a client sending 10 ms packets is as audible as one sending 20).
import { RtcpPacketConverter, RtcpReceiverInfo, RtcpSrPacket, isRtcp } from 'werift-rtp';
import { FRAME_SAMPLES } from './audio/format.js';
import { Reframer } from './audio/reframer.js';
import { JitterBuffer } from './jitterBuffer.js';
import { OpusFrameDecoder } from './opusCodec.js';
import { readRtp } from './rtp.js';

export class AudioReceiver {
  private readonly decoder = new OpusFrameDecoder();
  private readonly buffer = new JitterBuffer<Buffer>(3);
  private readonly frames: Reframer;
  /** Samples in the last decoded packet: a lost packet is replaced by that much silence. */
  private packetSamples = FRAME_SAMPLES;
  private remoteSsrc: number | undefined;
  private firstSeq: number | undefined;
  private received = 0;
  private jitter = 0;
  private lastTransit: number | undefined;
  private lastSr: { middle: number; at: number } | undefined;
  private lastReportExpected = 0;
  private lastReportReceived = 0;
  /** performance.now() of the last RTP packet, for idle detection. */
  lastPacketAt = 0;

  constructor(
    private readonly payloadType: number,
    onFrame: (frame: Int16Array) => void,
  ) {
    this.frames = new Reframer(FRAME_SAMPLES, onFrame);
  }

  handle(packet: Buffer): void {
    if (isRtcp(packet)) return this.handleRtcp(packet);
    const header = readRtp(packet);
    if (!header || header.payloadType !== this.payloadType) return;
    if (this.remoteSsrc !== header.ssrc) {
      // New or restarted stream: start its statistics afresh.
      this.remoteSsrc = header.ssrc;
      this.firstSeq = undefined;
      this.received = 0;
      this.lastTransit = undefined;
    }
    const now = performance.now();
    this.lastPacketAt = now;
    this.received++;
    // RFC 3550 interarrival jitter, in timestamp units (48 kHz).
    const transit = now * 48 - header.timestamp;
    if (this.lastTransit !== undefined) this.jitter += (Math.abs(transit - this.lastTransit) - this.jitter) / 16;
    this.lastTransit = transit;

    for (const out of this.buffer.push(header.sequenceNumber, header.payload)) {
      this.firstSeq ??= out.seq;
      if (out.lost) {
        this.frames.push(new Int16Array(this.packetSamples));
        continue;
      }
      const pcm = this.decoder.decode(out.value);
      if (!pcm) continue;
      this.packetSamples = pcm.length;
      this.frames.push(pcm);
    }
  }

  private handleRtcp(packet: Buffer): void {
    try {
      for (const p of RtcpPacketConverter.deSerialize(packet)) {
        if (p instanceof RtcpSrPacket) {
          this.lastSr = { middle: Number((p.senderInfo.ntpTimestamp >> 16n) & 0xffffffffn), at: performance.now() };
        }
      }
    } catch {
      // malformed RTCP is ignored
    }
  }

  get stats(): { received: number; lost: number; jitterMs: number } {
    return { received: this.received, lost: this.buffer.lost, jitterMs: this.jitter / 48 };
  }

  /** A reception report block about the caller's stream, or undefined before any packet. */
  reportBlock(): RtcpReceiverInfo | undefined {
    if (this.remoteSsrc === undefined || this.firstSeq === undefined) return undefined;
    const highest = this.buffer.highestSeq;
    const expected = highest - this.firstSeq + 1;
    const lost = Math.max(0, expected - this.received);
    const expectedInterval = expected - this.lastReportExpected;
    const receivedInterval = this.received - this.lastReportReceived;
    this.lastReportExpected = expected;
    this.lastReportReceived = this.received;
    const lostInterval = expectedInterval - receivedInterval;
    const fractionLost = expectedInterval > 0 && lostInterval > 0 ? Math.floor((lostInterval << 8) / expectedInterval) : 0;
    return new RtcpReceiverInfo({
      ssrc: this.remoteSsrc,
      fractionLost: Math.min(255, fractionLost),
      packetsLost: Math.min(lost, 0x7fffff),
      highestSequence: highest & 0xffffffff,
      jitter: Math.floor(this.jitter),
      lsr: this.lastSr?.middle ?? 0,
      dlsr: this.lastSr ? Math.floor(((performance.now() - this.lastSr.at) / 1000) * 65536) : 0,
    });
  }
}
