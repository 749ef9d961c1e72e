// Settings of one area. Calls: their limits, timeouts, load and encoding. src/config/env.ts merges the areas into the one validated table.
import { int, num, type Setting } from '../parsers.js';

export const callsSettings = {
  CALL_CONNECT_TIMEOUT_MS: {
    doc: 'A call whose peer has not connected (ICE + DTLS) by then is closed and recorded as failed (connect_timeout); until then it is half-open (MAX_HALF_OPEN_CALLS). Short, so offers that never connect hold no slot for long. Not for an incoming SIP call, which may ring for SIP_ROUTING_TIMEOUT_MS, then waits 32 s (RFC 3261\'s 64·T1) for the ACK of its 200.',
    default: '10000',
    parse: int(1000, 30000),
  },
  CALL_IDLE_TIMEOUT_MS: {
    doc: 'A connected call with no audio or data-channel message from the client for this long is ended (idle_timeout).',
    default: '60000',
    parse: int(1000, 86_400_000),
  },
  CALL_MAX_DURATION_MS: { doc: 'A call is ended after this long (max_duration).', default: '3600000', parse: int(1000, 86_400_000) },
  EVENT_LOOP_LAG_DEGRADED_MS: {
    doc: "/readyz reports the node degraded (still serving) while its event loop ran later than this in the last second; the figure is parley_event_loop_lag_seconds. Every call's media clock shares the loop.",
    default: '200',
    parse: int(10, 60000),
  },
  CALL_EVENTS_PER_SECOND: {
    doc: 'Client events (data-channel messages) one call may send a second, in bursts of twice that; beyond it they are dropped unread and the client gets an error event (rate_limit_exceeded) once a second. The call goes on.',
    default: '50',
    parse: int(1, 100000),
  },
  CALL_REPLIES_PER_SECOND: {
    doc: 'Replies one call\'s client may ask for a second (conversation.item.create, response.create), in bursts of twice that (at least 3); beyond it the request is refused with an error event (rate_limit_exceeded). Replies the agent starts at the end of a spoken turn are not counted.',
    default: '2',
    parse: int(1, 1000),
  },
  MAX_SIDEBANDS_PER_CALL: {
    doc: "Sideband connections (GET /v1/realtime?call_id=…) one call may have at once, counted on the node carrying it (a sideband relayed from another node included); one more is told an error event (too_many_sidebands) and closed; the call and its other sidebands go on. Each hears every event of the call.",
    default: '4',
    parse: int(1, 100),
  },
  CALL_RECONNECT_GRACE_MS: {
    doc: "A connected call whose client becomes unreachable (ICE disconnected: a network blip, a Wi-Fi to mobile switch) waits this long for it to come back before it ends (connection_lost). The client's own hang-up (its DTLS close) ends the call at once.",
    default: '5000',
    parse: int(0, 600000),
  },
  MAX_CONCURRENT_CALLS: { doc: 'Calls this node (each worker) carries at once; beyond it, a calls request is passed to the least-loaded live node with room (nodes sharing the database), or answered 503 with Retry-After when there is none.', default: '50', parse: int(1, 10000) },
  MAX_HALF_OPEN_CALLS: {
    doc: 'Calls not yet connected (offer answered, ICE + DTLS not done) this node (each worker) holds at once, within MAX_CONCURRENT_CALLS; beyond it the node is full for new calls (passed on, or 503) while connected calls keep the rest. 0: no separate budget.',
    default: '10',
    parse: int(0, 10000),
  },
  MAX_CALLS_PER_KEY: {
    doc: 'Calls one API key (its tokens together; the demo key too) may have at once: across every node and worker with REDIS_URL, else on this node (each worker); beyond it calls answers 429 with Retry-After, never passed to another node. 0: no limit.',
    default: '25',
    parse: int(0, 10000),
  },
  MAX_HALF_OPEN_CALLS_PER_KEY: {
    doc: 'Calls not yet connected one API key may have on this node (each worker) at once; beyond it 429 with Retry-After. 0: no limit.',
    default: '5',
    parse: int(0, 10000),
  },
  MAX_CALLS_PER_TOKEN: { doc: 'Calls one ephemeral token may have on this node (each worker) at once; beyond it 429 with Retry-After. 0: no limit.', default: '5', parse: int(0, 10000) },
  OPUS_COMPLEXITY: {
    doc: "Opus encoder complexity (0–10) for the agent's voice: encoding is most of a call's CPU; 9 (libopus's default, libwebrtc's on desktops) costs ≈ 1.8× what 5 (libwebrtc's on phones) costs for slightly better sound, 1 about half.",
    default: '5',
    parse: int(0, 10),
  },
  OPUS_MIN_COMPLEXITY: {
    doc: 'The lowest Opus encoder complexity the node steps down to under load (from OPUS_COMPLEXITY, a step each second the load is above 0.8 × LOAD_THRESHOLD, back up a step after 3 s below 0.6 × it): headroom before the node refuses calls.',
    default: '2',
    parse: int(0, 10),
  },
  LOAD_THRESHOLD: {
    doc: "The node's load (0–1: the busiest of its event loop's busy share, the machine's cores' busy share, and its event loop's lateness against 100 ms, 100 ms or more counting as 1; smoothed over ≈ 3 s) at which it takes no new calls itself: calls go to the least-loaded other node under it (WebRTC offers are passed on), or get 503 with Retry-After. It takes calls again 0.05 below. Unset: 0.75, but only to steer calls: a node that no other node takes a call from takes it itself (its Opus complexity lowered, /readyz degraded). 0: off (only MAX_CONCURRENT_CALLS limits).",
    parse: num(0, 1),
  },
} satisfies Record<string, Setting<unknown>>;
