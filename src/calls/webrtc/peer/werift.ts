// ServerPeer on werift: WebRTC in pure TypeScript (ICE, DTLS-SRTP, SCTP in this process), the second
// stack behind the same interface as libdatachannel, so the two can be swapped and measured.
import { parse as parseSdp } from 'sdp-transform';
import {
  EventDisposer,
  RTCPeerConnection,
  RTCRtpCodecParameters,
  RtcpPacketConverter,
  RtcpRrPacket,
  RtpPacket,
  isRtcp,
  type DtlsSocket,
  type RTCDataChannel,
  type RTCDtlsTransport,
  type RTCIceServer,
  type RTCRtpTransceiver,
  type RtcpPacket,
} from 'werift';
import type { MessageChannel } from '../../transport.js';
import type { AnswerRequest, PeerFactory, PeerFactoryOptions, PeerState, ServerPeer } from './types.js';

const STATES = new Set<PeerState>(['new', 'connecting', 'connected', 'disconnected', 'failed', 'closed']);
const noop = () => {};

class WeriftPeer implements ServerPeer {
  private pc: RTCPeerConnection | undefined;
  private audio: RTCRtpTransceiver | undefined;
  private video: RTCRtpTransceiver | undefined;
  /** The camera's SSRC, learnt from its RTP (the PLI names it). */
  private videoSsrc: number | undefined;
  private stateCb: (state: PeerState) => void = noop;
  private channelCb: (channel: MessageChannel) => void = noop;
  private audioCb: (p: Buffer) => void = noop;
  private videoCb: (p: Buffer) => void = noop;
  /** Every subscription we make on werift's events, undone at close. */
  private readonly subscriptions = new EventDisposer();
  private closed = false;

  constructor(private readonly opts: PeerFactoryOptions) {}

  async answer(req: AnswerRequest): Promise<string> {
    const { plan } = req;
    const bind = this.opts.bindAddress;
    // werift negotiates by MIME type and keeps the offer's payload types, so listing the codecs
    // we accept is enough: Opus, and the offer's video codecs (VP8/H.264 are received, anything
    // else only lets an inactive video m-line be answered instead of failing negotiation).
    const pc = new RTCPeerConnection({
      iceServers: this.opts.iceServers.map(toWeriftIceServer),
      codecs: {
        audio: [new RTCRtpCodecParameters({ mimeType: 'audio/opus', clockRate: 48000, channels: 2 })],
        video: videoCodecsOf(req),
      },
      headerExtensions: { audio: [], video: [] },
      iceUseIpv6: false,
      ...(this.opts.portRange ? { icePortRange: this.opts.portRange } : {}),
      // werift skips loopback and binds every socket to interfaceAddresses: bind there, and offer
      // only that address (see onlyBindAddress below).
      ...(bind ? { iceInterfaceAddresses: { udp4: bind }, iceAdditionalHostAddresses: [bind] } : {}),
      ...(bind ? { iceFilterCandidatePair: (pair: { protocol: { localIp?: string } }) => pair.protocol.localIp === bind } : {}),
    });
    this.pc = pc;
    const subs = this.subscriptions;
    pc.connectionStateChange
      .subscribe((state) => {
        // werift reports "closed" synchronously inside close(); hand states on a microtask later, as
        // libdatachannel's arrive from its own thread, so a caller closing us is never re-entered.
        if (STATES.has(state as PeerState)) queueMicrotask(() => this.stateCb(state as PeerState));
      })
      .disposer(subs);
    pc.onDataChannel.subscribe((dc) => whenOpen(dc, subs, () => this.channelCb(wrapChannel(dc, subs)))).disposer(subs);

    // Our audio transceiver, matched by kind to the offer's audio m-line (mid and Opus payload type
    // come from the offer). Its sender takes our SSRC, so the answer announces the SSRC our RTP
    // packets already carry and werift's rewrite of header.ssrc in sendRtp changes nothing.
    const audio = pc.addTransceiver('audio', { direction: 'sendrecv' });
    (audio.sender as { ssrc: number }).ssrc = req.audioSsrc;
    audio.receiver.rtcpSsrc = req.audioSsrc;
    this.audio = audio;
    forwardRtp(audio, subs, (p) => this.audioCb(p));
    if (plan.video) {
      const video = pc.addTransceiver('video', { direction: req.receiveVideo && plan.video.codecs.length ? 'recvonly' : 'inactive' });
      this.video = video;
      forwardRtp(video, subs, (p) => {
        if (!isRtcp(p) && p.length >= 12) this.videoSsrc = p.readUInt32BE(8);
        this.videoCb(p);
      });
    }

    await pc.setRemoteDescription({ type: 'offer', sdp: req.offerSdp });
    for (const transport of pc.dtlsTransports) this.watch(transport);
    for (const c of req.candidates) {
      await pc.addIceCandidate({ candidate: c.candidate, sdpMid: c.mid }).catch(() => {
        // A candidate we cannot use (other family, mDNS name, bad line) is skipped, as browsers do.
      });
    }
    const gathered = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, this.opts.gatheringTimeoutMs ?? 5000);
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      if (pc.iceGatheringState === 'complete') return done();
      pc.iceGatheringStateChange.subscribe((state) => state === 'complete' && done()).disposer(subs);
    });
    await pc.setLocalDescription(await pc.createAnswer());
    await gathered;
    const local = pc.localDescription;
    if (!local) throw new Error('no local description after applying the offer');
    let sdp = bind ? onlyBindAddress(local.sdp, bind) : local.sdp;
    if (this.opts.publicIp) sdp = advertisePublicIp(sdp, this.opts.publicIp);
    return sdp;
  }

  private watch(transport: RTCDtlsTransport): void {
    // werift routes the client's receiver reports by the SSRC our sender had before ours replaced
    // it, so they reach no one; taken here, they carry the call's round trips.
    transport.onRtcp
      .subscribe((rtcp) => {
        if (rtcp.type === RtcpRrPacket.type) this.audioCb(rtcp.serialize());
      })
      .disposer(this.subscriptions);
    transport.onStateChange
      .subscribe((state) => {
        if (state === 'connected' && transport.dtls) skipPastFinishedRecord(transport.dtls);
        // The client's DTLS alert (its pc.close()) is a hang-up; werift leaves the peer connection
        // "connected" until ICE consent expires.
        if (state === 'closed' && !this.closed) this.stateCb('closed');
      })
      .disposer(this.subscriptions);
  }

  onStateChange(cb: (state: PeerState) => void): void {
    this.stateCb = cb;
  }

  onDataChannel(cb: (channel: MessageChannel) => void): void {
    this.channelCb = cb;
  }

  onAudioPacket(cb: (packet: Buffer) => void): void {
    this.audioCb = cb;
  }

  onVideoPacket(cb: (packet: Buffer) => void): void {
    this.videoCb = cb;
  }

  requestKeyframe(): boolean {
    if (this.closed || !this.video || this.videoSsrc === undefined) return false;
    this.video.receiver.sendRtcpPLI(this.videoSsrc).catch(() => {});
    return true;
  }

  sendAudioPacket(packet: Buffer): boolean {
    const sender = this.audio?.sender;
    if (this.closed || !sender || sender.dtlsTransport?.state !== 'connected') return false;
    try {
      if (isRtcp(packet)) {
        // The call's own reports (SR/RR + SDES) go out as they are, on the bundle's transport.
        void sender.dtlsTransport.sendRtcp(RtcpPacketConverter.deSerialize(packet) as RtcpPacket[]).catch(() => {});
      } else {
        void sender.sendRtp(RtpPacket.deSerialize(packet)).catch(() => {});
      }
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Undoes every subscription and forgets every callback before closing, so that whatever werift
   * keeps alive after close (timers, sockets being torn down) cannot keep the call's session alive.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.subscriptions.dispose();
    this.stateCb = noop;
    this.channelCb = noop;
    this.audioCb = noop;
    this.videoCb = noop;
    const pc = this.pc;
    this.pc = undefined;
    this.audio = undefined;
    void pc?.close().catch(() => {});
  }
}

/**
 * werift-dtls (0.24) sends its Finished as epoch 1 with the epoch-0 record counter (e.g. sequence 6)
 * and only then restarts the counter at 0, so the 6th-or-so application record of epoch 1 reuses
 * that sequence number and the client's DTLS replay check drops it: one SCTP message per call was
 * lost until retransmitted ~1 s later (or never, when the call closes first). Jumping the counter
 * ahead keeps every later record newer than the Finished.
 */
function skipPastFinishedRecord(socket: DtlsSocket): void {
  socket.dtls.recordSequenceNumber += 1000;
}

/** Hands every RTP packet and sender report of a transceiver's remote track(s) on as raw bytes. */
function forwardRtp(transceiver: RTCRtpTransceiver, subs: EventDisposer, cb: (packet: Buffer) => void): void {
  transceiver.onTrack
    .subscribe((track) => {
      track.onReceiveRtp.subscribe((rtp) => cb(rtp.serialize())).disposer(subs);
    })
    .disposer(subs);
  // The client's sender reports (for our receiver reports' LSR/DLSR), as libdatachannel passes them.
  transceiver.receiver.onRtcp.subscribe((rtcp) => cb(rtcp.serialize())).disposer(subs);
}

/**
 * PeerFactoryOptions carries libdatachannel's URL form (`turn:user:pass@host:port?transport=udp`,
 * user and password URL-encoded); werift takes the browser form. werift uses the first STUN and the
 * first TURN server of the list.
 */
export function toWeriftIceServer(url: string): RTCIceServer {
  const m = /^(stuns?|turns?):(?:([^:@]*):([^@]*)@)?(.+)$/.exec(url);
  if (!m) return { urls: url };
  const [, scheme, user, pass, rest] = m;
  return user === undefined ? { urls: `${scheme}:${rest}` } : { urls: `${scheme}:${rest}`, username: decodeURIComponent(user), credential: decodeURIComponent(pass ?? '') };
}

function videoCodecsOf(req: AnswerRequest): RTCRtpCodecParameters[] {
  const { video } = req.plan;
  if (!video) return [];
  const codecs = video.codecs.length ? video.codecs.map((c) => c.name) : offeredVideoCodecs(req.offerSdp, video.mid);
  return [...new Set(codecs)].map((name) => new RTCRtpCodecParameters({ mimeType: `video/${name}`, clockRate: 90000 }));
}

function offeredVideoCodecs(offerSdp: string, mid: string): string[] {
  const media = parseSdp(offerSdp).media.find((m) => m.type === 'video' && String(m.mid) === mid);
  return (media?.rtp ?? []).map((r) => r.codec).slice(0, 1);
}

/**
 * werift announces a remote channel before marking it open and before queueing its DCEP ACK: hand
 * it on once open, a turn later, so the ACK leaves before our first message (as libdatachannel does).
 */
function whenOpen(dc: RTCDataChannel, subs: EventDisposer, cb: () => void): void {
  if (dc.readyState === 'open') return void setImmediate(cb);
  const sub = dc.stateChanged.subscribe((state) => {
    if (state !== 'open') return;
    sub.unSubscribe();
    setImmediate(cb);
  });
  sub.disposer(subs);
}

function wrapChannel(dc: RTCDataChannel, subs: EventDisposer): MessageChannel {
  return {
    label: dc.label,
    send: (text) => {
      if (dc.readyState !== 'open') return false;
      try {
        dc.send(text);
        return true;
      } catch {
        return false;
      }
    },
    onMessage: (cb) => void dc.onMessage.subscribe((msg) => cb(typeof msg === 'string' ? msg : msg.toString('utf8'))).disposer(subs),
    onClose: (cb) => void dc.stateChanged.subscribe((state) => state === 'closed' && cb()).disposer(subs),
    close: () => dc.close(),
  };
}

/** werift offers every host address; with a bind address only that host candidate is reachable. */
function onlyBindAddress(sdp: string, bind: string): string {
  return sdp
    .split('\r\n')
    .filter((line) => !/^a=candidate:\S+ \d+ \S+ \d+ \S+ \d+ typ host/.test(line) || line.split(' ')[4] === bind)
    .join('\r\n');
}

/** Replaces host candidate addresses with the configured public one (1:1 NAT), as media servers do. */
function advertisePublicIp(sdp: string, publicIp: string): string {
  return sdp.replace(/^(a=candidate:\S+ \d+ \S+ \d+ )(\S+)( \d+ typ host)/gm, `$1${publicIp}$3`).replace(/^c=IN IP4 \S+/gm, `c=IN IP4 ${publicIp}`);
}

export function weriftFactory(opts: PeerFactoryOptions): PeerFactory {
  return { name: 'werift', create: () => new WeriftPeer(opts) };
}
