// A call over WebRTC: the server's peer (ICE, DTLS-SRTP, SCTP), its media session (Opus in and out,
// RTCP), the client's event data channel, and the peer's states in the call's terms. The caller's
// audio leaves here at the rate the call asks for.
import { SAMPLE_RATE, type AudioOut } from '../../media/audio/format.js';
import { frameConverter } from '../../media/audio/resample.js';
import type { WireQuality } from '../callFigures.js';
import type { MediaTrackTransport, MessageChannel, TransportEvents } from '../transport.js';
import { MediaSession } from './mediaSession.js';
import type { PeerState, RemoteCandidate, ServerPeer } from './peer/types.js';
import type { OfferPlan } from './sdpOffer.js';
import type { OpusEncoderOptions } from '../../media/opusCodec.js';

/** Data-channel labels of the known clients (Orga's SDKs, OpenAI's): their channel carries the events. */
const EVENT_CHANNEL_LABELS = new Set(['orga-realtime-client-events', 'oai-events']);

/** How long a closed event channel waits for its peer's own close before the call is lost. */
const CHANNEL_CLOSE_GRACE_MS = 2000;

/** How long the goodbye event gets to leave before the peer closes (not after the client hung up). */
const GOODBYE_MS = 100;

export interface WebRtcOffer {
  /** The offer, its candidates already filtered. */
  sdp: string;
  plan: OfferPlan;
  candidates: RemoteCandidate[];
  /** Receive the offer's video (the session asks for it). */
  receiveVideo: boolean;
}

export class WebRtcTransport implements MediaTrackTransport {
  readonly kind = 'webrtc';
  // RTP audio, and the client's data channel for the event protocol.
  readonly offers = { mediaTrack: true, clientChannel: true } as const;
  private readonly media: MediaSession;
  private events: TransportEvents | undefined;
  private channel: MessageChannel | undefined;
  private toInputRate: (frame: Int16Array) => Int16Array = (frame) => frame;
  private closed = false;

  constructor(
    private readonly peer: ServerPeer,
    plan: OfferPlan,
    opusComplexity: OpusEncoderOptions['complexity'],
  ) {
    this.media = new MediaSession(peer, plan, opusComplexity, {
      audio: (frame) => this.events?.audio(this.toInputRate(frame)),
      agentAudio: (frame) => this.events?.agentAudio(frame),
      video: (frame) => this.events?.video(frame),
      activity: () => this.events?.activity(),
      failure: (err) => this.events?.failure(err),
    });
  }

  get audioOut(): AudioOut {
    return this.media.audioOut;
  }

  attach(events: TransportEvents): void {
    this.events = events;
    this.peer.onStateChange((state) => this.onPeerState(state));
    this.peer.onDataChannel((channel) => this.onChannel(channel));
  }

  requestKeyframe(): boolean {
    return !this.closed && this.media.requestKeyframe();
  }

  setInputRate(rate: number): void {
    this.toInputRate = frameConverter(SAMPLE_RATE, rate);
  }

  quality(): WireQuality {
    return this.media.quality();
  }

  /** Applies the offer; resolves with the answer SDP, which announces the SSRC our audio leaves with. */
  answer(offer: WebRtcOffer): Promise<string> {
    return this.peer.answer({
      offerSdp: offer.sdp,
      plan: offer.plan,
      candidates: offer.candidates,
      audioSsrc: this.media.audioSsrc,
      receiveVideo: offer.receiveVideo,
    });
  }

  async close(reason: string): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.media.stop();
    // Never synchronous up to the peer's close, so a stack that reports `closed` from inside
    // peer.close() finds the call ended and cannot end it twice.
    await new Promise((r) => setTimeout(r, this.channel && reason !== 'hangup' ? GOODBYE_MS : 0));
    this.peer.close();
  }

  private onPeerState(state: PeerState): void {
    const events = this.events!;
    if (this.closed) return;
    if (state === 'connected') {
      this.media.start();
      events.connected();
    } else if (state === 'disconnected') {
      events.interrupted();
    } else if (state === 'failed') {
      events.lost('ice_failed');
    } else if (state === 'closed') {
      events.lost('hangup');
    }
  }

  private onChannel(channel: MessageChannel): void {
    // The first channel the client opens carries events, unless a known client's channel follows.
    if (this.channel && !EVENT_CHANNEL_LABELS.has(channel.label)) return;
    this.channel = channel;
    channel.onClose(() => {
      // A client hanging up closes its channel too (its peer's close follows); a session whose
      // event channel is gone while its peer stays cannot go on.
      setTimeout(() => {
        if (!this.closed && this.channel === channel) this.events!.lost('data_channel_closed');
      }, CHANNEL_CLOSE_GRACE_MS).unref();
    });
    this.events!.channel(channel);
  }
}
