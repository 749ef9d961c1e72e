// The narrow interface between a call and the WebRTC stack that terminates it on the server, so the
// stack can be swapped (and measured against another) without touching the call logic.
import type { MessageChannel } from '../../transport.js';
import type { OfferPlan } from '../sdpOffer.js';

/**
 * The peer connection's state, with ICE and DTLS told apart: `disconnected` is ICE losing the
 * client for now (it may come back); `closed` is the DTLS session closed (the client hung up, its
 * pc.close()) or the peer closed; `failed` is ICE or DTLS failing for good.
 */
export type PeerState = 'new' | 'connecting' | 'connected' | 'disconnected' | 'failed' | 'closed';

export interface RemoteCandidate {
  candidate: string;
  mid: string;
}

export interface AnswerRequest {
  offerSdp: string;
  plan: OfferPlan;
  candidates: RemoteCandidate[];
  /** The SSRC our audio goes out with: announced in the answer so the client routes it to its track. */
  audioSsrc: number;
  /** Receive the offer's video m-line (recvonly); false answers it inactive. */
  receiveVideo: boolean;
}

export interface ServerPeer {
  /** Applies the offer and the client's candidates; resolves with the answer SDP once gathering is complete. */
  answer(req: AnswerRequest): Promise<string>;
  onStateChange(cb: (state: PeerState) => void): void;
  /** A data channel the client opened, carrying text messages. */
  onDataChannel(cb: (channel: MessageChannel) => void): void;
  /** Raw RTP and RTCP packets arriving on the audio m-line (SRTP already removed). */
  onAudioPacket(cb: (packet: Buffer) => void): void;
  /** Raw RTP and RTCP packets arriving on the video m-line. */
  onVideoPacket(cb: (packet: Buffer) => void): void;
  /** Asks the client for a key frame of its camera (RTCP PLI on the video m-line); false when it could not be sent. */
  requestKeyframe(): boolean;
  /** Sends one RTP or RTCP packet on the audio m-line. */
  sendAudioPacket(packet: Buffer): boolean;
  close(): void;
}

export interface PeerFactoryOptions {
  /** libdatachannel-style ICE server URLs for the server's own gathering; empty by default. */
  iceServers: string[];
  bindAddress?: string;
  portRange?: [number, number];
  /** Public address to advertise in place of the bound host address (1:1 NAT). */
  publicIp?: string;
  /** Seconds to wait for ICE gathering before answering with what was gathered. */
  gatheringTimeoutMs?: number;
}

export interface PeerFactory {
  readonly name: string;
  create(label: string): ServerPeer;
}
