// A WebRTC call's media: the RTP session (Opus each way, RTCP every second; media/rtpSession.ts)
// over the peer's DTLS-SRTP, where RTP and RTCP share the audio track, and the caller's camera.
import { isRtcp } from 'werift-rtp';
import type { AudioOut } from '../../media/audio/format.js';
import { RtpSession } from '../../media/rtpSession.js';
import { VideoReceiver, type VideoFrameInfo } from '../../media/videoReceiver.js';
import { rtpQuality, type WireQuality } from '../callFigures.js';
import type { ServerPeer } from './peer/types.js';
import type { OfferPlan } from './sdpOffer.js';
import type { OpusEncoderOptions } from '../../media/opusCodec.js';

/** Browsers expect RTCP about once a second. */
const RTCP_INTERVAL_MS = 1000;

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
  private readonly rtp: RtpSession;
  private readonly video: VideoReceiver | undefined;

  constructor(private readonly peer: ServerPeer, plan: OfferPlan, opusComplexity: OpusEncoderOptions['complexity'], sink: MediaSink) {
    this.rtp = new RtpSession({
      payloadType: plan.opusPayloadType,
      opus: { complexity: opusComplexity },
      reportIntervalMs: RTCP_INTERVAL_MS,
      sendRtp: (p) => peer.sendAudioPacket(p),
      sendRtcp: (p) => peer.sendAudioPacket(p),
      audio: (frame) => sink.audio(frame),
      agentAudio: (frame) => sink.agentAudio(frame),
      failure: (err) => sink.failure(err),
    });
    this.video = plan.video ? new VideoReceiver(plan.video.codecs, (frame) => sink.video(frame)) : undefined;
    // The stack calls these from its own callbacks: what throws there must not reach it.
    peer.onAudioPacket(
      this.rtp.guarded((p) => {
        sink.activity();
        if (isRtcp(p)) this.rtp.receiveRtcp(p);
        else this.rtp.receiveRtp(p);
      }),
    );
    peer.onVideoPacket(this.rtp.guarded((p) => this.video?.handle(p)));
  }

  /** Asks the caller's browser for a key frame of its camera (false: no camera, or not sent). */
  requestKeyframe(): boolean {
    return this.video ? this.peer.requestKeyframe() : false;
  }

  /** Where the agent's speech goes. */
  get audioOut(): AudioOut {
    return this.rtp.audioOut;
  }

  /** The SSRC our audio leaves with (announced in the answer). */
  get audioSsrc(): number {
    return this.rtp.ssrc;
  }

  /** The peer is connected: audio leaves on the 20 ms clock, RTCP every second. */
  start(): void {
    this.rtp.start();
  }

  stop(): void {
    this.rtp.stop();
  }

  /** What the media measured of the wire: the caller's stream as received, ours as sent, the round trips. */
  quality(): WireQuality {
    return rtpQuality(this.rtp.reception, this.rtp.sent, this.rtp.roundTrips);
  }
}
