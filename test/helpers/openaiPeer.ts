// A libwebrtc peer shaped like OpenAI's browser transport, for tests that post its offer themselves.
import wrtc from '@roamhq/wrtc';
import { waitFor } from './rtcClient.ts';

const { RTCPeerConnection } = wrtc as any;

/** A libwebrtc peer shaped like OpenAI's browser transport: audio sendrecv, `oai-events`, no ICE servers. */
export async function openAiStylePeer() {
  const pc = new RTCPeerConnection({ iceServers: [] });
  pc.addTransceiver('audio', { direction: 'sendrecv' });
  const channel = pc.createDataChannel('oai-events');
  const events: any[] = [];
  const listeners = new Set<() => void>();
  channel.onmessage = (e: { data: string }) => {
    events.push(JSON.parse(e.data));
    for (const l of listeners) l();
  };
  const offer = await pc.createOffer();
  await pc.setLocalDescription(offer);
  // Posted at once, like the published clients: the offer carries no candidates.
  return {
    pc,
    channel,
    events,
    offerSdp: offer.sdp as string,
    next(type: string, from = 0, timeoutMs = 10_000): Promise<any> {
      const found = () => events.slice(from).find((e) => e.type === type);
      return waitFor(() => !!found(), (cb) => listeners.add(cb), timeoutMs, type).then(() => found());
    },
    send(message: object) {
      channel.send(JSON.stringify(message));
    },
  };
}

