// The seam between a call and the wire that carries it (WebRTC, a WebSocket, SIP). A
// transport turns its wire into the call's terms — the caller's audio as PCM frames at the rate the
// call asks for, a channel of text messages for the event protocol, and connected / interrupted /
// lost — and plays the call's audio out in its own codec. The call never learns which wire it is on,
// only what the wire offers (a media track, a client channel).
import type { AudioOut } from '../media/audio/format.js';
import type { VideoFrameInfo } from '../media/videoReceiver.js';
import type { Session } from '../session/session.js';
import type { WireQuality } from './callFigures.js';

/** A channel of text messages between the client and the call's event protocol. */
export interface MessageChannel {
  /** The client's name for it (a data channel's label), for logs. */
  readonly label: string;
  send(text: string): boolean;
  onMessage(cb: (text: string) => void): void;
  onClose(cb: () => void): void;
  close(): void;
}

/** What a transport tells its call. */
export interface TransportEvents {
  /** The caller is reachable and media flows (ICE and DTLS up; a socket accepted). Again after an interruption. */
  connected(): void;
  /** The caller is unreachable for now (an ICE blip): the call waits a grace period for connected(). */
  interrupted(): void;
  /** The caller is gone for good; `reason` becomes the call's end reason (hangup, ice_failed…). */
  lost(reason: string): void;
  /**
   * 20 ms of the caller's audio, mono PCM at the rate last set with setInputRate. `capturedAt`
   * (performance.now() ms): when its recording ended, where frames arrive together (a WebSocket
   * append); absent, as it arrives.
   */
  audio(frame: Int16Array, capturedAt?: number): void;
  /** A key the caller pressed (a phone's DTMF). */
  dtmf(digit: string): void;
  /** A frame of the caller's camera. */
  video(frame: VideoFrameInfo): void;
  /** Anything from the caller (the idle timeout starts again). */
  activity(): void;
  /** The event channel opened (once): the call's protocol speaks on it. */
  channel(channel: MessageChannel): void;
  /** The transport's media path threw: the call cannot trust its audio any more. */
  failure(err: Error): void;
  /** The agent's audio (48 kHz mono) as it leaves for the caller: sent now on a media track, or handed to a client that plays it next. */
  agentAudio(pcm: Int16Array): void;
}

/**
 * What a wire itself said of its call, in its own terms, on the wires that say something: SIP's final
 * INVITE status of an outbound call (200 answered, 486 busy, 487 after our CANCEL…). The call's
 * record keeps it (the API and webhooks show SIP's as `sip_status`).
 */
export interface WireOutcome {
  /** The transport's kind (`sip`). */
  readonly wire: string;
  readonly code: number;
  /** The wire's words for it (a SIP reason phrase), for logs. */
  readonly reason?: string;
}

/** What a wire offers, fixed for its life. */
export interface WireOffers {
  /** Audio travels on a media track of its own (RTP); without one it travels inside the client's events. */
  readonly mediaTrack: boolean;
  /** The client has a channel for the event protocol; without one (a phone) the call's events are heard by sidebands only. */
  readonly clientChannel: boolean;
}

/** Audio inside the client's events, base64 in the session's encodings: a wire's with no media track. */
export interface EventAudio {
  /** The session changed: the encodings it asks for each way from now on. */
  sessionChanged(session: Session): void;
  /** The client's audio, from an event. */
  append(audio: string): void;
  /** Where the agent's audio goes, to be sent inside events; set once, by the call. */
  onOutput(send: (audio: string) => void): void;
}

interface Transport {
  /** Which wire this is (`webrtc`…), for logs and metrics. */
  readonly kind: string;
  readonly offers: WireOffers;
  /** Where the agent's speech goes: 48 kHz mono PCM, encoded and clocked out by the transport. */
  readonly audioOut: AudioOut;
  /** What the wire said of the call, once it did: an outbound phone call's final INVITE status. Recorded with the call's end. */
  readonly outcome?: WireOutcome;
  /** Starts telling `events` what happens; nothing is told before. */
  attach(events: TransportEvents): void;
  /** Asks the client for a key frame of its camera, when its wire carries one (false: none asked for). */
  requestKeyframe?(): boolean;
  /** The sample rate the caller's audio is delivered at from now on (what the agent declares it needs). */
  setInputRate(rate: number): void;
  /** What it measured of its wire so far (loss, jitter, round trips, bitrate); still valid after close. */
  quality(): WireQuality;
  /** Releases the wire; `reason` is the call's end reason (a transport may wait for its goodbye to leave). */
  close(reason: string): Promise<void>;
}

/** A wire whose audio has a media track (WebRTC, SIP). */
export interface MediaTrackTransport extends Transport {
  readonly offers: { readonly mediaTrack: true; readonly clientChannel: boolean };
}

/** A wire whose audio travels inside the client's events (a WebSocket): it always has the client's channel. */
export interface EventAudioTransport extends Transport {
  readonly offers: { readonly mediaTrack: false; readonly clientChannel: true };
  readonly eventAudio: EventAudio;
}

export type CallTransport = MediaTrackTransport | EventAudioTransport;

/** The transport's audio inside events, when its wire has no media track. */
export function eventAudioOf(transport: CallTransport): EventAudio | undefined {
  return transport.offers.mediaTrack ? undefined : (transport as EventAudioTransport).eventAudio;
}

/** A transport made for a call whose id is now known, and how to accept the client's request (an SDP answer). */
export interface PendingTransport<Accepted> {
  transport: CallTransport;
  /** Completes the set-up with the client; rejects with TransportRejected when the client's request cannot be used. */
  accept(): Promise<Accepted>;
}

/** The client's transport request cannot be used (an offer the stack refuses): a client error. */
export class TransportRejected extends Error {}
