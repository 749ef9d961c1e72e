// The caller's voice in: RTP (SRTP-decrypted by the stack, or plain) → reordering buffer → decode
// (Opus, or G.711 for phone calls) →
// 20 ms PCM frames for the agent, with the reception statistics RTCP reports and the call's
// quality figures need. Packets may carry any duration Opus allows (a client sending 10 ms packets
// is as audible as one sending 20).
import { RtcpReceiverInfo } from 'werift-rtp';
import { SampleSet } from '../system/sampleSet.js';
import { FRAME_SAMPLES, SAMPLE_RATE } from './audio/format.js';
import { Reframer } from './audio/reframer.js';
import { JitterBuffer } from './jitterBuffer.js';
import { OpusFrameDecoder } from './opusCodec.js';
import { ntpMiddle } from './rtcp.js';
import { readRtp } from './rtp.js';

/** How often the jitter is sampled for its percentiles (while packets arrive). */
const JITTER_SAMPLE_MS = 1000;

export interface ReceptionStats {
  /** Packets received (duplicates included, as RFC 3550 counts them). */
  received: number;
  /** Packets the sequence numbers say were sent: first to highest. */
  expected: number;
  /** Packets sent and never received (RFC 3550's cumulative loss, never below zero). */
  lost: number;
  /** The interarrival jitter now (RFC 3550), in ms. */
  jitterMs: number;
  /** The 95th percentile of the jitter sampled each second; undefined before the first second. */
  jitterP95Ms: number | undefined;
  /** Payload bytes of the packets decoded. */
  payloadBytes: number;
  /** Seconds of audio those packets carried. */
  audioSeconds: number;
}

/** A codec turning one RTP payload into 48 kHz PCM (null: not a valid payload), and its RTP clock rate. */
export interface FrameDecoder {
  readonly clockRate: number;
  decode(payload: Uint8Array): Int16Array | null;
}

function opusFrameDecoder(): FrameDecoder {
  const opus = new OpusFrameDecoder();
  return { clockRate: SAMPLE_RATE, decode: (payload) => opus.decode(payload) };
}

export class AudioReceiver {
  /** RTP timestamp units a millisecond. */
  private readonly unitsPerMs: number;
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
  private readonly jitterSamples = new SampleSet();
  private jitterSampledAt: number | undefined;
  private payloadBytes = 0;
  private decodedSamples = 0;
  private lastReportExpected = 0;
  private lastReportReceived = 0;

  constructor(
    private readonly payloadType: number,
    onFrame: (frame: Int16Array) => void,
    private readonly decoder: FrameDecoder = opusFrameDecoder(),
  ) {
    this.unitsPerMs = decoder.clockRate / 1000;
    this.frames = new Reframer(FRAME_SAMPLES, onFrame);
  }

  /** An RTP packet of the caller's stream. */
  handle(packet: Buffer): void {
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
    this.received++;
    // RFC 3550 interarrival jitter, in timestamp units.
    const transit = now * this.unitsPerMs - header.timestamp;
    if (this.lastTransit !== undefined) this.jitter += (Math.abs(transit - this.lastTransit) - this.jitter) / 16;
    this.lastTransit = transit;
    this.jitterSampledAt ??= now;
    if (now - this.jitterSampledAt >= JITTER_SAMPLE_MS) {
      this.jitterSamples.add(this.jitter / this.unitsPerMs);
      this.jitterSampledAt = now;
    }

    for (const out of this.buffer.push(header.sequenceNumber, header.payload)) {
      this.firstSeq ??= out.seq;
      if (out.lost) {
        this.frames.push(new Int16Array(this.packetSamples));
        continue;
      }
      const pcm = this.decoder.decode(out.value);
      if (!pcm) continue;
      this.packetSamples = pcm.length;
      this.payloadBytes += out.value.length;
      this.decodedSamples += pcm.length;
      this.frames.push(pcm);
    }
  }

  /** The caller sent a sender report with this NTP time (our reports echo it, for its round trips). */
  senderReport(ntp: bigint): void {
    this.lastSr = { middle: ntpMiddle(ntp), at: performance.now() };
  }

  get stats(): ReceptionStats {
    const expected = this.expected;
    return {
      received: this.received,
      expected,
      lost: Math.max(0, expected - this.received),
      jitterMs: this.jitter / this.unitsPerMs,
      jitterP95Ms: this.jitterSamples.percentile(95),
      payloadBytes: this.payloadBytes,
      audioSeconds: this.decodedSamples / SAMPLE_RATE,
    };
  }

  private get expected(): number {
    return this.firstSeq === undefined ? 0 : this.buffer.highestSeq - this.firstSeq + 1;
  }

  /** A reception report block about the caller's stream, or undefined before any packet. */
  reportBlock(): RtcpReceiverInfo | undefined {
    if (this.remoteSsrc === undefined || this.firstSeq === undefined) return undefined;
    const highest = this.buffer.highestSeq;
    const expected = this.expected;
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
