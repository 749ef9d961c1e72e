// A Node WebRTC client on libwebrtc (@roamhq/wrtc) that behaves like the existing browser clients:
// audio sendrecv + optional video sendonly without tracks, the `orga-realtime-client-events` data
// channel, candidates gathered (≤ 5 s) and posted in offer.candidates.
import wrtc from '@roamhq/wrtc';
import { http } from './server.ts';

const { RTCPeerConnection } = wrtc as any;

// libwebrtc's N-API finalizers crash during Node's environment teardown; leaving through
// process.exit once the test file is done skips that teardown (results are already reported).
process.once('beforeExit', (code) => process.exit(code));

export interface ClientOptions {
  video?: boolean;
  iceServers?: { urls: string | string[]; username?: string; credential?: string }[];
  iceTransportPolicy?: 'all' | 'relay';
  params?: Record<string, unknown>;
  /** Drop candidates (for a client that never connects). */
  withholdCandidates?: boolean;
  /** Ask the client's own encoder for this Opus packet duration (a=ptime added to the answer it applies). */
  ptime?: number;
  /** Extra headers of the calls request (e.g. `connection: close`, for a new connection). */
  headers?: Record<string, string>;
  /**
   * Tell the server none of the client's candidates (neither offer.candidates nor the SDP's lines)
   * and still apply its answer: the server learns the client's address from its checks alone.
   */
  hideCandidates?: boolean;
  /** Changes the server's answer before the client applies it (e.g. its candidates pointed at a relay). */
  rewriteAnswer?: (sdp: string) => string;
}

export interface RtcClient {
  pc: any;
  channel: any;
  conversationId: string;
  /** The node that answered the offer (its x-parley-node header). */
  answeredBy: string | null;
  answerSdp: string;
  offerSdp: string;
  events: any[];
  /** Resolves with the first event of that type (already received or to come), from event #`from` on. */
  nextEvent(type: string, timeoutMs?: number, from?: number): Promise<any>;
  send(message: unknown): void;
  waitConnected(timeoutMs?: number): Promise<void>;
  waitChannelOpen(timeoutMs?: number): Promise<void>;
  close(): void;
}

/** Resolves once `check()` holds, re-checking whenever `subscribe`'s callback fires. */
export function waitFor(check: () => boolean, subscribe: (cb: () => void) => void, timeoutMs: number, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    if (check()) return resolve();
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), timeoutMs);
    subscribe(() => {
      if (check()) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
}

export async function openCall(baseUrl: string, token: string, opts: ClientOptions = {}): Promise<RtcClient> {
  const pc = new RTCPeerConnection({ iceServers: opts.iceServers ?? [], iceTransportPolicy: opts.iceTransportPolicy ?? 'all' });
  pc.addTransceiver('audio', { direction: 'sendrecv' });
  if (opts.video) pc.addTransceiver('video', { direction: 'sendonly' });
  const channel = pc.createDataChannel('orga-realtime-client-events');
  const events: any[] = [];
  const listeners = new Set<() => void>();
  channel.onmessage = (e: { data: string }) => {
    try {
      events.push(JSON.parse(e.data));
    } catch {
      events.push({ type: '<unparsable>', raw: e.data });
    }
    for (const l of listeners) l();
  };
  const candidates: any[] = [];
  pc.onicecandidate = (e: any) => e.candidate && candidates.push(e.candidate.toJSON());
  const offer = await pc.createOffer();
  await pc.setLocalDescription(offer);
  await waitFor(() => pc.iceGatheringState === 'complete', (cb) => (pc.onicegatheringstatechange = cb), 5000, 'gathering').catch(() => {});
  const res = await http(baseUrl, '/v1/realtime/calls', {
    token,
    ...(opts.headers ? { headers: opts.headers } : {}),
    body: {
      offer: {
        sdp: opts.hideCandidates ? pc.localDescription.sdp.replace(/^a=candidate:.*\r\n/gm, '') : pc.localDescription.sdp,
        type: 'offer',
        candidates: opts.withholdCandidates || opts.hideCandidates ? [] : candidates,
      },
      params: opts.params ?? {},
    },
  });
  if (res.status !== 200) {
    pc.close();
    throw Object.assign(new Error(`calls answered ${res.status}: ${JSON.stringify(res.body)}`), { status: res.status, body: res.body });
  }
  let answerSdp: string = res.body.answer.sdp;
  if (opts.ptime) answerSdp = withPtime(answerSdp, opts.ptime);
  if (opts.rewriteAnswer) answerSdp = opts.rewriteAnswer(answerSdp);
  const answer = { ...res.body.answer, sdp: answerSdp };
  if (!opts.withholdCandidates) await pc.setRemoteDescription(answer);
  return {
    pc,
    channel,
    conversationId: res.body.conversation_id,
    answeredBy: res.headers.get('x-parley-node'),
    answerSdp: res.body.answer.sdp,
    offerSdp: pc.localDescription.sdp,
    events,
    nextEvent(type, timeoutMs = 10_000, from = 0) {
      return new Promise((resolve, reject) => {
        const found = () => events.find((e, i) => i >= from && e.type === type);
        if (found()) return resolve(found());
        const timer = setTimeout(() => {
          listeners.delete(l);
          reject(new Error(`no ${type} event within ${timeoutMs} ms; got ${events.map((e) => e.type).join(', ')}`));
        }, timeoutMs);
        const l = () => {
          const e = found();
          if (e) {
            clearTimeout(timer);
            listeners.delete(l);
            resolve(e);
          }
        };
        listeners.add(l);
      });
    },
    send(message) {
      channel.send(typeof message === 'string' ? message : JSON.stringify(message));
    },
    waitConnected(timeoutMs = 10_000) {
      return waitFor(() => pc.connectionState === 'connected', (cb) => (pc.onconnectionstatechange = cb), timeoutMs, 'connected');
    },
    waitChannelOpen(timeoutMs = 10_000) {
      return waitFor(() => channel.readyState === 'open', (cb) => (channel.onopen = cb), timeoutMs, 'data channel open');
    },
    close() {
      pc.close();
    },
  };
}

/** Adds a=ptime to the audio m-line: libwebrtc then packs that many ms of Opus per packet. */
function withPtime(sdp: string, ptime: number): string {
  return sdp.replace(/(m=audio [^\r\n]*\r\n)/, `$1a=ptime:${ptime}\r\n`);
}

const { RTCAudioSource, RTCAudioSink, RTCVideoSource } = (wrtc as any).nonstandard;

/** Attaches a microphone that plays a 440 Hz tone (10 ms chunks) with replaceTrack; returns stop(). */
export async function attachTone(client: RtcClient, amplitude = 8000): Promise<() => void> {
  const source = new RTCAudioSource();
  const track = source.createTrack();
  const transceiver = client.pc.getTransceivers().find((t: any) => t.receiver.track.kind === 'audio');
  await transceiver.sender.replaceTrack(track);
  let phase = 0;
  const timer = setInterval(() => {
    const samples = new Int16Array(480);
    for (let i = 0; i < samples.length; i++) samples[i] = Math.round(amplitude * Math.sin((2 * Math.PI * 440 * phase++) / 48000));
    source.onData({ samples, sampleRate: 48000, bitsPerSample: 16, channelCount: 1, numberOfFrames: 480 });
  }, 10);
  return () => {
    clearInterval(timer);
    track.stop();
  };
}

/** Attaches a camera (a flat grey 320x240 picture at 15 fps) with replaceTrack; returns stop(). */
export async function attachCamera(client: RtcClient): Promise<() => void> {
  const source = new RTCVideoSource();
  const track = source.createTrack();
  const transceiver = client.pc.getTransceivers().find((t: any) => t.receiver.track.kind === 'video');
  await transceiver.sender.replaceTrack(track);
  const width = 320;
  const height = 240;
  const data = new Uint8ClampedArray(width * height * 1.5).fill(128);
  const timer = setInterval(() => source.onFrame({ width, height, data }), 66);
  return () => {
    clearInterval(timer);
    track.stop();
  };
}

/** Listens to the server's audio; reports the peak RMS level heard so far and samples received. */
export function listen(client: RtcClient): { peakRms: () => number; samples: () => number; stop: () => void } {
  const transceiver = client.pc.getTransceivers().find((t: any) => t.receiver.track.kind === 'audio');
  const sink = new RTCAudioSink(transceiver.receiver.track);
  let peak = 0;
  let count = 0;
  sink.ondata = (d: { samples: Int16Array }) => {
    let sum = 0;
    for (const s of d.samples) sum += s * s;
    count += d.samples.length;
    peak = Math.max(peak, Math.sqrt(sum / d.samples.length));
  };
  return { peakRms: () => peak, samples: () => count, stop: () => sink.stop() };
}

/** Packets the client has sent on its audio track (outbound-rtp). */
export async function outboundAudioPackets(client: RtcClient): Promise<number> {
  return (await outboundAudio(client)).packetsSent;
}

/** The client's outbound-rtp audio statistics: packets and payload bytes sent. */
export async function outboundAudio(client: RtcClient): Promise<{ packetsSent: number; bytesSent: number }> {
  const stats = await client.pc.getStats();
  let found = { packetsSent: 0, bytesSent: 0 };
  stats.forEach((s: any) => {
    if (s.type === 'outbound-rtp' && (s.kind === 'audio' || s.mediaType === 'audio')) found = { packetsSent: s.packetsSent ?? 0, bytesSent: s.bytesSent ?? 0 };
  });
  return found;
}

/** The client's inbound-rtp audio statistics from getStats(). */
export async function inboundAudio(client: RtcClient): Promise<{ packetsReceived: number; packetsLost: number; jitter: number; bytesReceived: number; audioLevel?: number; timestamp?: number }> {
  const stats = await client.pc.getStats();
  let found: any = { packetsReceived: 0, packetsLost: 0, jitter: 0, bytesReceived: 0 };
  stats.forEach((s: any) => {
    if (s.type === 'inbound-rtp' && (s.kind === 'audio' || s.mediaType === 'audio')) found = s;
  });
  return found;
}
