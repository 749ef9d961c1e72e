// A call's media: the caller's audio in (RTP → jitter buffer → Opus → 20 ms PCM), the agent's audio
// out (PCM → Opus → RTP on the media clock), the caller's camera (frames), the RTCP reports each
// way, and what they tell of the wire's quality.
import { randomInt } from 'node:crypto';
import { isRtcp } from 'werift-rtp';
import { AudioReceiver } from '../../media/audioReceiver.js';
import { AudioSender } from '../../media/audioSender.js';
import type { AudioOut } from '../../media/audio/format.js';
import { callReport, ntpNow, readRtcp } from '../../media/rtcp.js';
import { RoundTripMeter } from '../../media/roundTrip.js';
import { VideoReceiver, type VideoFrameInfo } from '../../media/videoReceiver.js';
import { rtpQuality, type WireQuality } from '../callFigures.js';
import type { ServerPeer } from './peer/types.js';
import type { OfferPlan } from './sdpOffer.js';

export interface MediaSink {
  /** A 20 ms frame of the caller's audio. */
  audio(frame: Int16Array): void;
  /** A 20 ms frame of the agent's audio as it leaves. */
  agentAudio(frame: Int16Array): void;
  /** A frame of the caller's camera. */
  video(frame: VideoFrameInfo): void;
  /** Any packet from the caller (activity, for the idle timeout). */
  activity(): void;
  /** Handling the media threw (a packet in, a tick out, a report): the call cannot be trusted to go on. */
  failure(err: Error): void;
}

export class MediaSession {
  private readonly sender: AudioSender;
  private readonly receiver: AudioReceiver;
  private readonly video: VideoReceiver | undefined;
  private readonly roundTrips = new RoundTripMeter();
  private reportTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly peer: ServerPeer,
    plan: OfferPlan,
    opusComplexity: number | undefined,
    private readonly sink: MediaSink,
  ) {
    this.sender = new AudioSender((p) => this.peer.sendAudioPacket(p), randomInt(1, 0xffffffff), plan.opusPayloadType, {
      encoder: { complexity: opusComplexity },
      onError: (err) => sink.failure(err),
      onFrame: (frame) => sink.agentAudio(frame),
    });
    this.receiver = new AudioReceiver(plan.opusPayloadType, (frame) => sink.audio(frame));
    this.video = plan.video ? new VideoReceiver(plan.video.codecs, (frame) => sink.video(frame)) : undefined;
    // The stack calls these from its own callbacks: what throws there must not reach it.
    peer.onAudioPacket(
      this.guarded((p) => {
        sink.activity();
        if (isRtcp(p)) this.handleRtcp(p);
        else this.receiver.handle(p);
      }),
    );
    peer.onVideoPacket(this.guarded((p) => this.video?.handle(p)));
  }

  /** `fn`, with what it throws reported to the sink instead. */
  private guarded<A extends unknown[]>(fn: (...args: A) => void): (...args: A) => void {
    return (...args) => {
      try {
        fn(...args);
      } catch (err) {
        this.sink.failure(err instanceof Error ? err : new Error(String(err)));
      }
    };
  }

  /** Where the agent's speech goes. */
  get audioOut(): AudioOut {
    return this.sender;
  }

  /** The SSRC our audio leaves with (announced in the answer). */
  get audioSsrc(): number {
    return this.sender.ssrc;
  }

  /** The peer is connected: audio leaves on the 20 ms clock, RTCP every second. */
  start(): void {
    this.sender.start();
    this.reportTimer ??= setInterval(this.guarded(() => this.sendReport()), 1000);
  }

  stop(): void {
    this.sender.stop();
    clearInterval(this.reportTimer);
  }

  /** What the media measured of the wire: the caller's stream as received, ours as sent, the round trips. */
  quality(): WireQuality {
    return rtpQuality(this.receiver.stats, this.sender, this.roundTrips);
  }

  /** The caller's RTCP: its sender reports (for our reports' LSR) and its reports about our stream (round trips). */
  private handleRtcp(packet: Buffer): void {
    const now = performance.now();
    const wallClock = ntpNow();
    const { senderReports, receptionReports } = readRtcp(packet);
    for (const ntp of senderReports) this.receiver.senderReport(ntp);
    for (const block of receptionReports) {
      if (block.ssrc === this.sender.ssrc) this.roundTrips.reportReceived(block.lsr, block.dlsr, now, wallClock);
    }
  }

  private sendReport(): void {
    const { packet, senderReportNtp } = callReport(this.sender, this.receiver);
    if (this.peer.sendAudioPacket(packet) && senderReportNtp !== undefined) this.roundTrips.senderReportSent(senderReportNtp, performance.now());
  }
}
