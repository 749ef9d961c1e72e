// A libwebrtc (@roamhq/wrtc) caller for the call benchmarks: offers like the existing clients, on
// loopback only, and marks when it posted the offer, got the answer, connected and heard the server.
import wrtc from '@roamhq/wrtc';
import { setTimeout as sleep } from 'node:timers/promises';
import { waitFor } from '../../test/helpers/rtcClient.ts';
import { http } from '../../test/helpers/server.ts';

const { RTCPeerConnection } = wrtc as any;

export interface PlacedCall {
  pc: any;
  channel: any;
  conversationId: string;
  /** performance.now() marks: POST sent, answer received, connected, first server event. */
  marks: { post: number; answer: number; connected: number; firstEvent: number };
}

/** Only the 127.0.0.1 UDP candidates: the benchmark stays on loopback. */
export function loopbackOnly(sdp: string): string {
  return sdp
    .split('\r\n')
    .filter((l) => !l.startsWith('a=candidate:') || / udp \d+ 127\.0\.0\.1 /i.test(l))
    .join('\r\n');
}

/**
 * Offers like the existing clients (audio sendrecv, optional video sendonly, the events data
 * channel), gathers, posts to /calls and waits for connected and the first server event.
 */
export async function placeCall(
  baseUrl: string,
  token: string,
  opts: { video?: boolean; audioTrack?: any; params?: Record<string, unknown> } = {},
): Promise<PlacedCall> {
  const pc = new RTCPeerConnection({ iceServers: [], bundlePolicy: 'max-bundle' });
  if (opts.audioTrack) pc.addTransceiver(opts.audioTrack, { direction: 'sendrecv' });
  else pc.addTransceiver('audio', { direction: 'sendrecv' });
  if (opts.video) pc.addTransceiver('video', { direction: 'sendonly' });
  const channel = pc.createDataChannel('orga-realtime-client-events');
  let firstEventAt = 0;
  const firstEvent = new Promise<void>((resolve) => {
    channel.onmessage = () => {
      firstEventAt ||= performance.now();
      resolve();
    };
  });
  try {
    const candidates: any[] = [];
    pc.onicecandidate = (e: any) => e.candidate && / udp \d+ 127\.0\.0\.1 /i.test(e.candidate.candidate) && candidates.push(e.candidate.toJSON());
    await pc.setLocalDescription(await pc.createOffer());
    await waitFor(() => pc.iceGatheringState === 'complete', (cb) => (pc.onicegatheringstatechange = cb), 5000, 'gathering').catch(() => {});
    const post = performance.now();
    const res = await http(baseUrl, '/v1/realtime/calls', {
      token,
      body: { offer: { sdp: loopbackOnly(pc.localDescription.sdp), type: 'offer', candidates }, params: opts.params ?? { model: 'audio-echo' } },
    });
    const answer = performance.now();
    if (res.status !== 200) throw new Error(`calls answered ${res.status}: ${JSON.stringify(res.body).slice(0, 200)}`);
    await pc.setRemoteDescription(res.body.answer);
    await waitFor(() => pc.connectionState === 'connected', (cb) => (pc.onconnectionstatechange = cb), 15_000, 'connected');
    const connected = performance.now();
    await Promise.race([firstEvent, sleep(10_000).then(() => Promise.reject(new Error('no server event within 10 s')))]);
    return { pc, channel, conversationId: res.body.conversation_id, marks: { post, answer, connected, firstEvent: firstEventAt } };
  } catch (err) {
    pc.close();
    throw err;
  }
}
