// One RTP audio session, whatever wire carries it: the agent's audio out (AudioSender on the media
// clock), the caller's in (AudioReceiver), our RTCP reports on a timer and what the caller's say
// (its sender reports, for ours to echo; its reports on our stream, for round trips), and what
// throws in any of it reported to the owner instead of thrown. The wire is the owner's: it sends the
// packets (DTLS-SRTP through a WebRTC peer, plain or SDES-keyed UDP for a phone call) and hands the
// session the caller's packets it has accepted as the call's.
import { randomInt } from 'node:crypto';
import type { AudioOut } from './audio/format.js';
import { AudioReceiver, type ReceptionStats } from './audioReceiver.js';
import { AudioSender, type AudioSenderOptions } from './audioSender.js';
import { g711Decoder, g711Encoder, type G711Law } from './g711.js';
import type { OpusEncoderOptions } from './opusCodec.js';
import { callReport, ntpNow, readRtcp } from './rtcp.js';
import { RoundTripMeter } from './roundTrip.js';

export interface RtpSessionOptions {
  /** The payload type of the audio each way. */
  payloadType: number;
  /** G.711 (phone calls); unset: Opus at 48 kHz. */
  g711?: G711Law;
  /** The Opus encoder's settings (unused with G.711). */
  opus?: OpusEncoderOptions;
  /** How often our RTCP report leaves once started. */
  reportIntervalMs: number;
  /** Sends one of our RTP packets; false when it could not leave. */
  sendRtp: (packet: Buffer) => boolean;
  /** Sends one of our RTCP reports; false when it could not leave (no round trip is timed from it). */
  sendRtcp: (packet: Buffer) => boolean;
  /**
   * Whether a report has somewhere to go now (unset: always). Asked before one is made: making one
   * closes an interval of the loss it reports.
   */
  canReport?: () => boolean;
  /** A 20 ms frame of the caller's audio (48 kHz). */
  audio: (frame: Int16Array) => void;
  /** A 20 ms frame of the agent's audio as it leaves. */
  agentAudio: (frame: Int16Array) => void;
  /** Keep-alive media while the agent is silent (AudioSender's keepAlive); unset: none. */
  keepAlive?: AudioSenderOptions['keepAlive'];
  /** Handling the media threw (a packet in, a tick out, a report): the call cannot be trusted to go on. */
  failure: (err: Error) => void;
}

export class RtpSession {
  private readonly sender: AudioSender;
  private readonly receiver: AudioReceiver;
  readonly roundTrips = new RoundTripMeter();
  private reportTimer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: RtpSessionOptions) {
    // Opus is the sender's and receiver's own codec; G.711 is given to them.
    this.sender = new AudioSender(opts.sendRtp, randomInt(1, 0xffffffff), opts.payloadType, {
      encoder: opts.opus,
      codec: opts.g711 && g711Encoder(opts.g711),
      onError: opts.failure,
      onFrame: opts.agentAudio,
      keepAlive: opts.keepAlive,
    });
    this.receiver = new AudioReceiver(opts.payloadType, opts.audio, opts.g711 && g711Decoder(opts.g711));
  }

  /** `fn`, with what it throws reported as a failure instead (for the wire's callbacks). */
  guarded<A extends unknown[]>(fn: (...args: A) => void): (...args: A) => void {
    return (...args) => {
      try {
        fn(...args);
      } catch (err) {
        this.opts.failure(err instanceof Error ? err : new Error(String(err)));
      }
    };
  }

  /** Where the agent's speech goes. */
  get audioOut(): AudioOut {
    return this.sender;
  }

  /** The SSRC our audio leaves with. */
  get ssrc(): number {
    return this.sender.ssrc;
  }

  /** The caller's stream as received. */
  get reception(): ReceptionStats {
    return this.receiver.stats;
  }

  /** Our stream as sent. */
  get sent(): { packets: number; octets: number } {
    return this.sender;
  }

  /** Audio leaves on the 20 ms clock, and our reports on theirs. */
  start(): void {
    this.sender.start();
    this.reportTimer ??= setInterval(this.guarded(() => this.sendReport()), this.opts.reportIntervalMs);
  }

  stop(): void {
    this.sender.stop();
    clearInterval(this.reportTimer);
  }

  /** An RTP packet of the caller's audio stream (decrypted). */
  receiveRtp(packet: Buffer): void {
    this.receiver.handle(packet);
  }

  /**
   * The caller's RTCP (decrypted): its sender reports (for our reports' LSR) and its reports about
   * our stream (round trips). False when it carried neither.
   */
  receiveRtcp(packet: Buffer): boolean {
    const now = performance.now();
    const wallClock = ntpNow();
    const { senderReports, receptionReports } = readRtcp(packet);
    for (const ntp of senderReports) this.receiver.senderReport(ntp);
    for (const block of receptionReports) {
      if (block.ssrc === this.sender.ssrc) this.roundTrips.reportReceived(block.lsr, block.dlsr, now, wallClock);
    }
    return senderReports.length > 0 || receptionReports.length > 0;
  }

  /** Our report: a receiver report on the caller's stream, a sender report once we have sent audio. */
  private sendReport(): void {
    if (this.opts.canReport && !this.opts.canReport()) return;
    const { packet, senderReportNtp } = callReport(this.sender, this.receiver);
    if (this.opts.sendRtcp(packet) && senderReportNtp !== undefined) this.roundTrips.senderReportSent(senderReportNtp, performance.now());
  }
}
