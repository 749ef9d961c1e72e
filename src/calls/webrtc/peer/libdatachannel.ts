// ServerPeer on libdatachannel (node-datachannel): native ICE/DTLS/SRTP/SCTP, raw RTP to us.
import ndc from 'node-datachannel';
import type { MessageChannel } from '../../transport.js';
import type { AnswerRequest, PeerFactory, PeerFactoryOptions, PeerState, ServerPeer } from './types.js';

const STATES = new Set<PeerState>(['new', 'connecting', 'connected', 'disconnected', 'failed', 'closed']);
const noop = () => {};

class LibDataChannelPeer implements ServerPeer {
  private readonly pc: ndc.PeerConnection;
  private audioTrack: ndc.Track | undefined;
  private videoTrack: ndc.Track | undefined;
  private readonly tracks: ndc.Track[] = [];
  private readonly channels: ndc.DataChannel[] = [];
  private audioCb: (p: Buffer) => void = noop;
  private videoCb: (p: Buffer) => void = noop;
  private closed = false;

  constructor(
    label: string,
    private readonly opts: PeerFactoryOptions,
  ) {
    this.pc = new ndc.PeerConnection(label, {
      iceServers: opts.iceServers,
      ...(opts.bindAddress ? { bindAddress: opts.bindAddress } : {}),
      ...(opts.portRange ? { portRangeBegin: opts.portRange[0], portRangeEnd: opts.portRange[1] } : {}),
    });
  }

  async answer(req: AnswerRequest): Promise<string> {
    const { plan } = req;
    // libdatachannel hands raw RTP per track: the audio track must exist, with the offer's mid and
    // Opus payload type, before the remote description is applied.
    const audio = new ndc.Audio(plan.audioMid, 'SendRecv');
    audio.addOpusCodec(plan.opusPayloadType);
    audio.addSSRC(req.audioSsrc, 'parley', 'parley', 'agent-audio');
    this.audioTrack = this.pc.addTrack(audio);
    this.tracks.push(this.audioTrack);
    this.audioTrack.onMessage((msg) => this.audioCb(msg));

    if (plan.video) {
      const video = new ndc.Video(plan.video.mid, req.receiveVideo && plan.video.codecs.length ? 'RecvOnly' : 'Inactive');
      for (const c of plan.video.codecs) {
        if (c.name === 'VP8') video.addVP8Codec(c.payloadType);
        else video.addH264Codec(c.payloadType);
      }
      const videoTrack = this.pc.addTrack(video);
      // The RTCP receiving session sends the PLI requestKeyframe() asks for (it learns the camera's
      // SSRC from its RTP); RTP passes through it unchanged.
      videoTrack.setMediaHandler(new ndc.RtcpReceivingSession());
      this.videoTrack = videoTrack;
      this.tracks.push(videoTrack);
      videoTrack.onMessage((msg) => this.videoCb(msg));
    }

    const gathered = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, this.opts.gatheringTimeoutMs ?? 5000);
      this.pc.onGatheringStateChange((state) => {
        if (state === 'complete') {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    this.pc.setRemoteDescription(req.offerSdp, 'offer');
    for (const c of req.candidates) {
      try {
        this.pc.addRemoteCandidate(c.candidate, c.mid);
      } catch {
        // A candidate we cannot use (other family, mDNS name, bad line) is skipped, as browsers do.
      }
    }
    await gathered;
    const local = this.pc.localDescription();
    if (!local) throw new Error('no local description after applying the offer');
    return this.opts.publicIp ? advertisePublicIp(local.sdp, this.opts.publicIp) : local.sdp;
  }

  onStateChange(cb: (state: PeerState) => void): void {
    this.pc.onStateChange((state) => {
      if (!STATES.has(state as PeerState)) return;
      // libdatachannel says `disconnected` both for an ICE blip and for the client's DTLS close
      // (which closes its ICE transport too): the ICE state tells them apart.
      if (state === 'disconnected' && this.pc.iceState() === 'closed') return cb('closed');
      cb(state as PeerState);
    });
  }

  onDataChannel(cb: (channel: MessageChannel) => void): void {
    this.pc.onDataChannel((dc) => {
      if (this.closed) return void dc.close();
      this.channels.push(dc);
      cb(wrapChannel(dc));
    });
  }

  onAudioPacket(cb: (packet: Buffer) => void): void {
    this.audioCb = cb;
  }

  onVideoPacket(cb: (packet: Buffer) => void): void {
    this.videoCb = cb;
  }

  requestKeyframe(): boolean {
    if (this.closed || !this.videoTrack?.isOpen()) return false;
    try {
      return this.videoTrack.requestKeyframe();
    } catch {
      return false;
    }
  }

  sendAudioPacket(packet: Buffer): boolean {
    if (this.closed || !this.audioTrack?.isOpen()) return false;
    try {
      return this.audioTrack.sendMessageBinary(packet);
    } catch {
      return false;
    }
  }

  /**
   * node-datachannel holds each JS callback in a thread-safe function, a GC root, until the native
   * object reports itself closed, which a closed peer connection's callbacks do not always get to
   * do: every call's session stayed reachable through them. So every callback we set is replaced
   * by a no-op first, then the channels, tracks and connection are closed (which releases the rest).
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const dc of this.channels) {
      quietly(() => dc.onMessage(noop));
      quietly(() => dc.onClosed(noop));
      quietly(() => dc.close());
    }
    for (const track of this.tracks) {
      quietly(() => track.onMessage(noop));
      quietly(() => track.close());
    }
    quietly(() => this.pc.onStateChange(noop));
    quietly(() => this.pc.onGatheringStateChange(noop));
    quietly(() => this.pc.onDataChannel(noop));
    quietly(() => this.pc.close());
    this.channels.length = 0;
    this.tracks.length = 0;
    this.audioTrack = undefined;
    this.videoTrack = undefined;
    this.audioCb = noop;
    this.videoCb = noop;
  }
}

/** Runs a native call that throws on an already-destroyed object; there is nothing left to release then. */
function quietly(run: () => void): void {
  try {
    run();
  } catch {
    // already closed
  }
}

function wrapChannel(dc: ndc.DataChannel): MessageChannel {
  return {
    label: dc.getLabel(),
    send: (text) => {
      try {
        return dc.isOpen() && dc.sendMessage(text);
      } catch {
        return false;
      }
    },
    onMessage: (cb) =>
      dc.onMessage((msg) => cb(typeof msg === 'string' ? msg : Buffer.from(msg as ArrayBuffer).toString('utf8'))),
    onClose: (cb) => dc.onClosed(cb),
    close: () => dc.close(),
  };
}

/** Replaces host candidate addresses with the configured public one (1:1 NAT), as media servers do. */
function advertisePublicIp(sdp: string, publicIp: string): string {
  return sdp.replace(/^(a=candidate:\S+ \d+ \S+ \d+ )(\S+)( \d+ typ host)/gm, `$1${publicIp}$3`).replace(/^c=IN IP4 \S+/gm, `c=IN IP4 ${publicIp}`);
}

export function libDataChannelFactory(opts: PeerFactoryOptions): PeerFactory {
  return { name: 'libdatachannel', create: (label) => new LibDataChannelPeer(label, opts) };
}
