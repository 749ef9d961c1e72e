// A phone call's media (its SIP dialog is the front door's, src/sip/): the RTP session
// (media/rtpSession.ts: G.711 or Opus each way, RTCP every five seconds on its own port) over UDP,
// plain or SRTP keyed by SDES when the caller offers RTP/SAVP, and RFC 4733 key presses. Symmetric
// RTP: our audio goes where the caller's comes from (callers behind NAT announce addresses nobody
// can reach); the first valid packets latch that source and packets from any other are dropped.
// While the agent is silent, silence (or RFC 3389 comfort noise, when the caller offered it) keeps
// leaving at the packet time, for the NATs, SBCs and PBXes that drop a call carrying no RTP; and a
// call whose caller sends neither RTP nor RTCP for the media timeout (it vanished without BYE) ends.
import { randomBytes } from 'node:crypto';
import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { isRtcp } from 'werift-rtp';
import { SAMPLE_RATE, type AudioOut } from '../../media/audio/format.js';
import { LateAudioOut } from '../../media/audio/lateAudioOut.js';
import { frameConverter } from '../../media/audio/resample.js';
import type { ReceptionStats } from '../../media/audioReceiver.js';
import { RoundTripMeter } from '../../media/roundTrip.js';
import { readRtp } from '../../media/rtp.js';
import { RtpSession } from '../../media/rtpSession.js';
import { SRTP_KEY_BYTES, SRTP_SALT_BYTES, SrtpChannel } from '../../media/srtp.js';
import { TelephoneEvents } from '../../media/telephoneEvent.js';
import { rtpQuality, type WireQuality } from '../callFigures.js';
import type { MediaTrackTransport, TransportEvents, WireOutcome } from '../transport.js';
import { answerDirection, type AudioOffer } from './sdp.js';

/** An outbound call's reception before the callee answered. */
const NOTHING_RECEIVED: ReceptionStats = { received: 0, expected: 0, lost: 0, jitterMs: 0, jitterP95Ms: undefined, payloadBytes: 0, audioSeconds: 0 };

/** RTCP every five seconds, RFC 3550's minimum interval. */
const RTCP_INTERVAL_MS = 5000;

interface Endpoint {
  address: string;
  port: number;
}

/** A call's media settings from the node's configuration. */
export interface SipMediaOptions {
  /** A caller that sends neither RTP nor RTCP for this long is gone: the call ends (media_timeout). 0: never. */
  inactivityTimeoutMs: number;
  /** The clock the media timeout reads, ms (performance.now; a test's fake one). */
  now?: () => number;
}

/** The dialog's side of the call, as the transport needs it. */
export interface SipDialogControl {
  /** Ends the dialog from our side (BYE), for a call that ends here. */
  hangUp(): void;
}

export class SipTransport implements MediaTrackTransport {
  readonly kind = 'sip';
  // RTP audio; no channel for the event protocol (a phone): only sidebands hear the call's events.
  readonly offers = { mediaTrack: true, clientChannel: false } as const;
  /** The RTP session, once the other side's description is known (negotiated()). */
  private media: RtpSession | undefined;
  private guardedRtp: (packet: Buffer, from: RemoteInfo) => void = () => {};
  private guardedRtcp: (packet: Buffer, from: RemoteInfo) => void = () => {};
  /** Where the agent speaks: the RTP session's sender once there is one (an outbound call's agent exists before its answer). */
  private readonly audio = new LateAudioOut();
  private readonly keys = new TelephoneEvents();
  private events: TransportEvents | undefined;
  private toInputRate: (frame: Int16Array) => Int16Array = (frame) => frame;
  private offer!: AudioOffer;
  /** Where our RTP and RTCP go: the offer's addresses until the caller's packets latch theirs. */
  private rtpPeer: Endpoint = { address: '0.0.0.0', port: 0 };
  private rtcpPeer: Endpoint = { address: '0.0.0.0', port: 0 };
  private rtpLatched = false;
  private rtcpLatched = false;
  private confirmed = false;
  private closed = false;
  private dialog: SipDialogControl | undefined;
  /** The caller ended the dialog (BYE or CANCEL): nothing to say back on close. */
  private endedByCaller = false;
  /** SRTP for an RTP/SAVP call: our key (for the answer) and the channel that uses both. */
  localCrypto: { key: Buffer; salt: Buffer } | undefined;
  private srtp: SrtpChannel | undefined;
  /**
   * The final SIP status of an outbound call's INVITE (200 answered, 486 busy, 487 after our CANCEL
   * at the ring timeout…), set by the SIP door; undefined for an incoming call.
   */
  sipStatus: number | undefined;

  /** The call's outcome on this wire (its record and webhooks): the outbound INVITE's final status. */
  get outcome(): WireOutcome | undefined {
    return this.sipStatus === undefined ? undefined : { wire: this.kind, code: this.sipStatus };
  }
  /** When the caller's RTP or RTCP last came (options.now()), and the timer watching it. */
  private lastHeard = 0;
  private readonly now: () => number;
  private inactivity: NodeJS.Timeout | undefined;

  private constructor(
    private readonly rtp: Socket,
    private readonly rtcp: Socket,
    private readonly options: SipMediaOptions,
  ) {
    this.now = options.now ?? (() => performance.now());
    rtp.on('message', (packet: Buffer, from: RemoteInfo) => this.media && this.guardedRtp(packet, from));
    rtcp.on('message', (packet: Buffer, from: RemoteInfo) => this.media && this.guardedRtcp(packet, from));
  }

  /**
   * Binds the RTP and RTCP sockets on `host`: for an incoming call, answering `offer` at once; for
   * an outbound one, to be offered, the media set up by negotiated() when the callee answers.
   */
  static async open(host: string, options: SipMediaOptions, offer?: AudioOffer): Promise<SipTransport> {
    const [rtp, rtcp] = await Promise.all([bind(host), bind(host)]);
    const transport = new SipTransport(rtp, rtcp, options);
    if (offer) transport.negotiated(offer);
    return transport;
  }

  /**
   * The other side's description (the caller's offer, or the callee's answer to ours): the codec,
   * where our packets go, SRTP keys for RTP/SAVP; the RTP session starts on it.
   */
  negotiated(offer: AudioOffer): void {
    if (this.media) return;
    this.offer = offer;
    if (offer.crypto) {
      this.localCrypto = { key: randomBytes(SRTP_KEY_BYTES), salt: randomBytes(SRTP_SALT_BYTES) };
      this.srtp = new SrtpChannel({ local: this.localCrypto, remote: offer.crypto });
    }
    this.rtpPeer = { address: offer.address, port: offer.port };
    this.rtcpPeer = { address: offer.address, port: offer.rtcpPort };
    const media = new RtpSession({
      payloadType: offer.payloadType,
      g711: offer.codec === 'opus' ? undefined : offer.codec,
      reportIntervalMs: RTCP_INTERVAL_MS,
      sendRtp: (p) => this.sendRtp(p),
      sendRtcp: (p) => this.sendRtcp(p),
      // A held call announcing no address has nowhere for our reports to go.
      canReport: () => this.rtcpPeer.address !== '0.0.0.0',
      audio: (frame) => this.events?.audio(this.toInputRate(frame)),
      // The agent's audio as it leaves, for the call's recording.
      agentAudio: (frame) => this.events?.agentAudio(frame),
      failure: (err) => this.events?.failure(err),
      // RFC 3389 comfort noise when the caller offered it, else the codec's silence.
      keepAlive: offer.comfortNoisePayloadType === undefined ? { kind: 'silence' } : { kind: 'comfortNoise', payloadType: offer.comfortNoisePayloadType },
    });
    this.guardedRtp = media.guarded((packet: Buffer, from: RemoteInfo) => this.onRtp(packet, from));
    this.guardedRtcp = media.guarded((packet: Buffer, from: RemoteInfo) => this.onRtcp(packet, from));
    this.media = media;
    this.audio.bind(media.audioOut);
  }

  get rtpPort(): number {
    return this.rtp.address().port;
  }

  get rtcpPort(): number {
    return this.rtcp.address().port;
  }

  get currentOffer(): AudioOffer {
    return this.offer;
  }

  get audioOut(): AudioOut {
    return this.audio;
  }

  /** The dialog this transport's call is, once it is established. */
  bindDialog(dialog: SipDialogControl): void {
    this.dialog = dialog;
  }

  attach(events: TransportEvents): void {
    this.events = events;
    if (this.confirmed) events.connected();
  }

  setInputRate(rate: number): void {
    this.toInputRate = frameConverter(SAMPLE_RATE, rate);
  }

  /** The caller acknowledged our answer (ACK): the call is up and audio flows both ways. */
  confirm(): void {
    if (this.confirmed || this.closed || !this.media) return;
    this.confirmed = true;
    this.media.start();
    this.watchInactivity();
    this.events?.connected();
  }

  /** A new offer in the dialog (re-INVITE: hold, resume, a moved media address). */
  update(offer: AudioOffer): void {
    const moved = offer.address !== this.offer.address || offer.port !== this.offer.port;
    // The codec and the SRTP keys stay those of the call (the caller's re-offer may only move or hold it).
    this.offer = { ...offer, codec: this.offer.codec, payloadType: this.offer.payloadType, comfortNoisePayloadType: this.offer.comfortNoisePayloadType, protocol: this.offer.protocol, crypto: this.offer.crypto };
    if (moved && offer.address !== '0.0.0.0') {
      this.rtpPeer = { address: offer.address, port: offer.port };
      this.rtcpPeer = { address: offer.address, port: offer.rtcpPort };
      this.rtpLatched = this.rtcpLatched = false;
    }
  }

  /** A key the caller pressed, told in its signalling (SIP INFO) rather than in the RTP. */
  keyPressed(digit: string): void {
    if (this.closed) return;
    this.events?.activity();
    this.events?.dtmf(digit);
  }

  /** The caller hung up (BYE) or gave up (CANCEL). */
  callerEnded(reason: string): void {
    this.endedByCaller = true;
    this.events?.lost(reason);
  }

  quality(): WireQuality {
    if (!this.media) return rtpQuality(NOTHING_RECEIVED, { packets: 0, octets: 0 }, new RoundTripMeter());
    return rtpQuality(this.media.reception, this.media.sent, this.media.roundTrips);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.inactivity);
    this.media?.stop();
    if (!this.endedByCaller) this.dialog?.hangUp();
    this.rtp.close();
    this.rtcp.close();
  }

  /**
   * Ends the call when the caller's RTP and RTCP stop for the timeout (a phone unplugged, a
   * process killed, a NAT binding gone): its BYE will never come. A caller that said it sends
   * nothing (hold: recvonly, inactive) is not expected to.
   */
  private watchInactivity(): void {
    const timeout = this.options.inactivityTimeoutMs;
    if (timeout === 0) return;
    this.lastHeard = this.now();
    this.inactivity = setInterval(() => {
      const silentByOffer = this.offer.direction === 'recvonly' || this.offer.direction === 'inactive' || this.offer.address === '0.0.0.0';
      if (silentByOffer) this.lastHeard = this.now();
      else if (this.now() - this.lastHeard > timeout) {
        clearInterval(this.inactivity);
        this.events?.lost('media_timeout');
      }
    }, Math.min(1000, timeout));
    this.inactivity.unref();
  }

  /** Whether our direction lets us send audio now (not while the caller holds us). */
  private get sending(): boolean {
    const ours = answerDirection(this.offer.direction);
    return ours === 'sendrecv' || ours === 'sendonly';
  }

  private sendRtp(packet: Buffer): boolean {
    if (this.closed || !this.sending || this.rtpPeer.address === '0.0.0.0') return false;
    this.rtp.send(this.srtp ? this.srtp.protectRtp(packet) : packet, this.rtpPeer.port, this.rtpPeer.address);
    return true;
  }

  private onRtp(received: Buffer, from: RemoteInfo): void {
    if (this.closed) return;
    if (this.rtpLatched && !same(from, this.rtpPeer)) return;
    // Under SRTP a packet that does not authenticate is nobody's: dropped before it can latch.
    const packet = this.srtp ? this.srtp.unprotectRtp(received) : received;
    if (!packet) return;
    const header = readRtp(packet);
    const dtmf = this.offer.dtmfPayloadType;
    const comfortNoise = header?.payloadType === this.offer.comfortNoisePayloadType;
    // Only a packet of the stream we agreed latches (a stray or forged datagram is not RTP of ours).
    if (!header || (header.payloadType !== this.offer.payloadType && header.payloadType !== dtmf && !comfortNoise)) return;
    if (!this.rtpLatched) {
      this.rtpLatched = true;
      this.rtpPeer = { address: from.address, port: from.port };
    }
    this.lastHeard = this.now();
    this.events?.activity();
    // The caller's comfort noise says it is there; the silence it stands for is not played to the agent.
    if (comfortNoise) return;
    if (header.payloadType === dtmf) {
      const digit = this.keys.read(header.payload, header.timestamp);
      if (digit) this.events?.dtmf(digit);
      return;
    }
    this.media!.receiveRtp(packet);
  }

  private onRtcp(received: Buffer, from: RemoteInfo): void {
    if (this.closed) return;
    if (this.rtcpLatched && !same(from, this.rtcpPeer)) return;
    if (!isRtcp(received)) return;
    const packet = this.srtp ? this.srtp.unprotectRtcp(received) : received;
    if (!packet) return;
    // Only a compound packet with a report in it latches (not a stray datagram).
    if (!this.media!.receiveRtcp(packet)) return;
    if (!this.rtcpLatched) {
      this.rtcpLatched = true;
      this.rtcpPeer = { address: from.address, port: from.port };
    }
    this.lastHeard = this.now();
  }

  private sendRtcp(packet: Buffer): boolean {
    this.rtcp.send(this.srtp ? this.srtp.protectRtcp(packet) : packet, this.rtcpPeer.port, this.rtcpPeer.address);
    return true;
  }
}

function same(from: RemoteInfo, peer: Endpoint): boolean {
  return from.address === peer.address && from.port === peer.port;
}

function bind(host: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = createSocket(host.includes(':') ? 'udp6' : 'udp4');
    socket.once('error', reject);
    socket.bind(0, host, () => {
      socket.off('error', reject);
      // A send to a closed port reports ICMP as an error here: not the call's concern.
      socket.on('error', () => {});
      resolve(socket);
    });
  });
}
