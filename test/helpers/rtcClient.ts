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
}

export interface RtcClient {
  pc: any;
  channel: any;
  conversationId: string;
  answerSdp: string;
  offerSdp: string;
  events: any[];
  /** Resolves with the first event of that type (already received or to come). */
  nextEvent(type: string, timeoutMs?: number): Promise<any>;
  send(message: unknown): void;
  waitConnected(timeoutMs?: number): Promise<void>;
  waitChannelOpen(timeoutMs?: number): Promise<void>;
  close(): void;
}

function waitFor(check: () => boolean, subscribe: (cb: () => void) => void, timeoutMs: number, what: string): Promise<void> {
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
    body: {
      offer: { sdp: pc.localDescription.sdp, type: 'offer', candidates: opts.withholdCandidates ? [] : candidates },
      params: opts.params ?? {},
    },
  });
  if (res.status !== 200) {
    pc.close();
    throw Object.assign(new Error(`calls answered ${res.status}: ${JSON.stringify(res.body)}`), { status: res.status, body: res.body });
  }
  if (!opts.withholdCandidates) await pc.setRemoteDescription(res.body.answer);
  return {
    pc,
    channel,
    conversationId: res.body.conversation_id,
    answerSdp: res.body.answer.sdp,
    offerSdp: pc.localDescription.sdp,
    events,
    nextEvent(type, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const found = () => events.find((e) => e.type === type);
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
