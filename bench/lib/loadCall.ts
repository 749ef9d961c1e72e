// One load-generator call on libdatachannel (node-datachannel): the existing clients' flow
// (client-secrets → ice-config → calls with the Orga body, the `orga-realtime-client-events` data
// channel open and `session.created` heard), then pre-encoded Opus packets out with this call's
// RTP header, and the statistics of what comes back. No codec work per call: sending copies a
// payload behind a 12-byte header; receiving reads the header (what else is done with the agent's
// audio is the caller's `onAudio`).
import ndc from 'node-datachannel';
import { randomInt } from 'node:crypto';
import { buildReport } from '../../src/media/rtcp.ts';
import { readRtp, writeRtp } from '../../src/media/rtp.ts';
import { http } from '../../test/helpers/server.ts';
import { ReceiveStats } from './receiveStats.ts';

const OPUS_PAYLOAD_TYPE = 111;
const EVENTS_LABEL = 'orga-realtime-client-events';

/** What a call sends: one pre-encoded Opus payload per packet time. */
export interface PacketSource {
  readonly ptimeMs: number;
  next(now: number): Buffer;
}

export interface AgentAudio {
  marker: boolean;
  sequenceNumber: number;
  timestamp: number;
  payload: Buffer;
}

export interface LoadCallOptions {
  baseUrl: string;
  apiKey: string;
  source: PacketSource;
  /** `params` of the calls request (the Orga clients' fields). */
  params: Record<string, unknown>;
  /** Called with each server event after session.created (parsed JSON). */
  onEvent?: (event: { type?: string; [k: string]: unknown }) => void;
  /** Called with each inbound RTP packet of the agent's audio (the payload is valid during the call only). */
  onAudio?: (rtp: AgentAudio, now: number) => void;
}

/** The calls request was answered with an error status (a full or loaded node: 503). */
export class CallRefused extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** performance.now() of each step of the call's setup. */
export interface SetupMarks {
  start: number;
  token: number;
  iceConfig: number;
  answer: number;
  connected: number;
  sessionCreated: number;
}

export class LoadCall {
  readonly ssrc = randomInt(1, 0xffffffff);
  private seq = randomInt(0, 0x10000);
  private timestamp = randomInt(0, 0x7fffffff);
  packetsSent = 0;
  private octetsSent = 0;
  /** Reception statistics of the agent's audio. */
  readonly audioIn = new ReceiveStats();
  conversationId = '';
  /** The node that answered the offer (x-parley-node): another than the one asked when it was passed on. */
  answeredBy: string | null = null;
  state = 'new';

  private constructor(
    private readonly pc: ndc.PeerConnection,
    private readonly track: ndc.Track,
    private readonly channel: ndc.DataChannel,
    private readonly source: PacketSource,
    readonly marks: SetupMarks,
  ) {}

  static async open(opts: LoadCallOptions): Promise<LoadCall> {
    const start = performance.now();
    const secret = await http(opts.baseUrl, '/v1/realtime/client-secrets', { method: 'POST', token: opts.apiKey, headers: { 'content-type': 'application/json' } });
    if (secret.status !== 200) throw new Error(`client-secrets answered ${secret.status}`);
    const token = secret.body.ephemeral_token as string;
    const tokenAt = performance.now();
    // The ICE servers it names are not used: host candidates on 127.0.0.1 connect, and a benchmark
    // must not send packets off this machine.
    const ice = await http(opts.baseUrl, '/v1/realtime/ice-config', { token });
    if (ice.status !== 200) throw new Error(`ice-config answered ${ice.status}`);
    const iceConfigAt = performance.now();

    const pc = new ndc.PeerConnection('loadgen', { iceServers: [], bindAddress: '127.0.0.1' });
    let call: LoadCall | undefined;
    try {
      const audio = new ndc.Audio('0', 'SendRecv');
      audio.addOpusCodec(OPUS_PAYLOAD_TYPE);
      const track = pc.addTrack(audio);
      const candidates: { candidate: string; sdpMid: string }[] = [];
      pc.onLocalCandidate((candidate, mid) => candidates.push({ candidate, sdpMid: mid }));
      const gathered = new Promise<void>((resolve) => pc.onGatheringStateChange((s) => s === 'complete' && resolve()));
      const channel = pc.createDataChannel(EVENTS_LABEL);
      await withTimeout(gathered, 5000, 'ICE gathering');
      const offer = pc.localDescription();
      if (!offer) throw new Error('no local offer');

      const sessionCreated = new Promise<void>((resolve) => {
        channel.onMessage((msg) => {
          const text = typeof msg === 'string' ? msg : Buffer.from(msg as ArrayBuffer).toString('utf8');
          let event: { type?: string };
          try {
            event = JSON.parse(text);
          } catch {
            return;
          }
          if (event.type === 'session.created') resolve();
          else opts.onEvent?.(event);
        });
      });
      const connected = new Promise<void>((resolve, reject) =>
        pc.onStateChange((s) => {
          if (call) call.state = s;
          if (s === 'connected') resolve();
          else if (s === 'failed' || s === 'closed') reject(new Error(`peer ${s}`));
        }),
      );
      connected.catch(() => {}); // awaited below; a failure before then must not go unhandled
      const res = await http(opts.baseUrl, '/v1/realtime/calls', {
        token,
        body: { offer: { sdp: offer.sdp, type: 'offer', candidates }, params: opts.params },
      });
      if (res.status !== 200) throw new CallRefused(res.status, `calls answered ${res.status}: ${JSON.stringify(res.body).slice(0, 200)}`);
      const answerAt = performance.now();
      const marks: SetupMarks = { start, token: tokenAt, iceConfig: iceConfigAt, answer: answerAt, connected: 0, sessionCreated: 0 };
      call = new LoadCall(pc, track, channel, opts.source, marks);
      call.conversationId = res.body.conversation_id;
      call.answeredBy = res.headers.get('x-parley-node');
      const c = call;
      track.onMessage((packet) => {
        // RTCP (packet types 192–223 in the second byte) is not counted.
        if (packet.length < 2 || (packet[1]! >= 192 && packet[1]! <= 223)) return;
        const rtp = readRtp(packet);
        if (!rtp || rtp.payloadType !== OPUS_PAYLOAD_TYPE) return;
        const now = performance.now();
        c.audioIn.packet(rtp.sequenceNumber, rtp.timestamp, now);
        opts.onAudio?.(rtp, now);
      });
      pc.setRemoteDescription(res.body.answer.sdp, 'answer');
      await withTimeout(connected, 15_000, 'connected');
      marks.connected = performance.now();
      await withTimeout(sessionCreated, 10_000, 'session.created');
      marks.sessionCreated = performance.now();
      return call;
    } catch (err) {
      pc.close();
      throw err;
    }
  }

  get ptimeMs(): number {
    return this.source.ptimeMs;
  }

  /** Sends the source's next packet; false if the track would not take it. */
  sendNext(now: number): boolean {
    const payload = this.source.next(now);
    const packet = writeRtp(
      { payloadType: OPUS_PAYLOAD_TYPE, sequenceNumber: this.seq, timestamp: this.timestamp, ssrc: this.ssrc, marker: this.packetsSent === 0 },
      payload,
    );
    this.seq = (this.seq + 1) & 0xffff;
    this.timestamp = (this.timestamp + this.source.ptimeMs * 48) >>> 0;
    let ok = false;
    try {
      ok = this.track.sendMessageBinary(packet);
    } catch {
      ok = false;
    }
    if (ok) {
      this.packetsSent++;
      this.octetsSent += payload.length;
    }
    return ok;
  }

  /** A sender report with SDES, as browsers send about once a second. */
  sendReport(): void {
    const report = buildReport('loadgen', { ssrc: this.ssrc, rtpTimestamp: this.timestamp, packets: this.packetsSent, octets: this.octetsSent }, undefined, true);
    try {
      this.track.sendMessageBinary(report);
    } catch {
      // a closed track: the call's figures show it
    }
  }

  /** Sends a client event on the data channel. */
  sendEvent(event: unknown): void {
    try {
      if (this.channel.isOpen()) this.channel.sendMessage(JSON.stringify(event));
    } catch {
      // closed channel
    }
  }

  close(): void {
    try {
      this.channel.close();
    } catch {
      // already closed
    }
    this.pc.close();
  }
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([p, new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms)))]).finally(() =>
    clearTimeout(timer),
  );
}
