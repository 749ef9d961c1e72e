// A call from the browser, made the way the service's existing client libraries make it: a token
// (here from the demo's backend-proxy route), then an offer with an audio sendrecv and a video
// sendonly transceiver plus the `orga-realtime-client-events` data channel, candidates gathered
// for at most 5 s and posted in offer.candidates, the answer applied, the mic attached with
// replaceTrack.

export const EVENTS_CHANNEL = 'orga-realtime-client-events';
const GATHER_LIMIT_MS = 5000;
const REQUEST_TIMEOUT_MS = 10000;

/** An HTTP answer that was not 200, with the message from its body (Shape A or B). */
export class ApiError extends Error {
  constructor(status, body) {
    super(messageOf(status, body));
    this.status = status;
    this.body = body;
  }
}

function messageOf(status, body) {
  const error = body && body.error;
  if (error) return typeof error.message === 'string' ? error.message : (error.message && error.message.message) || `HTTP ${status}`;
  if (body && Array.isArray(body.detail)) return body.detail.map((d) => `${(d.loc || []).slice(1).join('.') || 'body'}: ${d.msg}`).join('; ');
  if (body && typeof body.detail === 'string') return body.detail;
  return `HTTP ${status}`;
}

async function requestJson(path, { method = 'GET', token, body } = {}) {
  const headers = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const text = await res.text();
  let parsed = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = text;
  }
  if (!res.ok) throw new ApiError(res.status, parsed);
  return parsed;
}

/** The backend-proxy route: `{ephemeralToken, iceServers}` (the server SDK's guide form). */
export function requestSession() {
  return requestJson('/demo/session', { method: 'POST', body: {} });
}

/** What params.model and params.voice accept, with their defaults. */
export async function fetchCatalog(token) {
  const [models, voices] = await Promise.all([
    requestJson('/v1/realtime/models', { token }),
    requestJson('/v1/realtime/voices', { token }),
  ]);
  return { models, voices };
}

function gatherCandidates(pc) {
  const candidates = [];
  pc.addEventListener('icecandidate', (e) => {
    if (e.candidate && e.candidate.candidate) candidates.push(e.candidate.toJSON());
  });
  const done = new Promise((resolve) => {
    const check = () => pc.iceGatheringState === 'complete' && resolve();
    pc.addEventListener('icegatheringstatechange', check);
    setTimeout(resolve, GATHER_LIMIT_MS);
  });
  return { candidates, done };
}

/**
 * Places a call. `on.event(message)` gets every data-channel message, `on.state(state)` the
 * connection state, `on.stream(stream)` the agent's audio. Returns the live call.
 */
export async function startCall({ token, iceServers, params, micTrack, cameraTrack, on }) {
  const pc = new RTCPeerConnection({ iceServers, iceTransportPolicy: 'all' });
  const audio = pc.addTransceiver('audio', { direction: 'sendrecv' });
  const video = pc.addTransceiver('video', { direction: 'sendonly' });
  const channel = pc.createDataChannel(EVENTS_CHANNEL);
  channel.addEventListener('message', (e) => {
    let message;
    try {
      message = JSON.parse(e.data);
    } catch {
      message = { type: '<unparsable>', raw: String(e.data) };
    }
    on.event(message);
  });
  pc.addEventListener('track', (e) => on.stream(e.streams[0] || new MediaStream([e.track])));
  pc.addEventListener('connectionstatechange', () => {
    on.state(pc.connectionState);
    // As the existing clients do: no ICE restart, a lost connection ends the call.
    if (pc.connectionState === 'failed' || pc.connectionState === 'disconnected') pc.close();
  });

  try {
    on.state('gathering');
    const gathering = gatherCandidates(pc);
    await pc.setLocalDescription(await pc.createOffer());
    await gathering.done;
    on.state('offering');
    const res = await requestJson('/v1/realtime/calls', {
      method: 'POST',
      token,
      body: {
        offer: { sdp: pc.localDescription.sdp, type: 'offer', candidates: gathering.candidates },
        params,
      },
    });
    if (!res || !res.answer || !res.conversation_id) throw new Error('calls answered without answer or conversation_id');
    await pc.setRemoteDescription(res.answer);
    on.state('connecting');
    if (micTrack) await audio.sender.replaceTrack(micTrack);
    if (cameraTrack) await video.sender.replaceTrack(cameraTrack);
    return {
      pc,
      conversationId: res.conversation_id,
      send(message) {
        if (channel.readyState === 'open') channel.send(JSON.stringify(message));
      },
      hangUp() {
        pc.close();
      },
    };
  } catch (err) {
    pc.close();
    throw err;
  }
}

/** The agent's audio as this browser receives it, from getStats() (inbound-rtp, audio). */
export async function inboundAudio(pc) {
  const stats = await pc.getStats();
  let found = { packetsReceived: 0, packetsLost: 0, jitter: 0, audioLevel: 0, totalAudioEnergy: 0 };
  stats.forEach((s) => {
    if (s.type === 'inbound-rtp' && s.kind === 'audio') found = s;
  });
  return {
    packetsReceived: found.packetsReceived || 0,
    packetsLost: found.packetsLost || 0,
    jitter: found.jitter || 0,
    audioLevel: found.audioLevel || 0,
    totalAudioEnergy: found.totalAudioEnergy || 0,
  };
}

/** The microphone's audio as this browser sends it, from getStats() (outbound-rtp, audio). */
export async function outboundAudio(pc) {
  const stats = await pc.getStats();
  let packetsSent = 0;
  stats.forEach((s) => {
    if (s.type === 'outbound-rtp' && s.kind === 'audio') packetsSent = s.packetsSent || 0;
  });
  return { packetsSent };
}

/** The camera's video as this browser sends it, from getStats() (outbound-rtp, video). */
export async function outboundVideo(pc) {
  const stats = await pc.getStats();
  let framesEncoded = 0;
  stats.forEach((s) => {
    if (s.type === 'outbound-rtp' && s.kind === 'video') framesEncoded = s.framesEncoded || 0;
  });
  return { framesEncoded };
}

/** The microphone's level as sent (media-source, audio), 0..1. */
export async function micLevel(pc) {
  const stats = await pc.getStats();
  let level = 0;
  stats.forEach((s) => {
    if (s.type === 'media-source' && s.kind === 'audio' && typeof s.audioLevel === 'number') level = s.audioLevel;
  });
  return level;
}
