// Prometheus metrics for operators (GET /metrics): calls, their outcomes, answer latency, tokens,
// TURN, call sessions still in memory, ICE candidates refused, where the voice agent's time goes,
// stage by stage, each call's quality and usage at its end, and the readiness checks' states (so
// that alerting rules see a database or Redis away: deploy/prometheus/).
import cluster from 'node:cluster';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { clusterMetricsReader } from './clusterMetrics.js';
import { LiveObjects } from './liveObjects.js';
import { HEALTH_STATES, type ReadinessChecks } from './readiness.js';

/** Seconds, around the 0.1–1 s a voice agent's stages take. */
const STAGE_BUCKETS = [0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.45, 0.6, 0.8, 1, 1.5, 2.5, 5];

export class Metrics {
  readonly registry = new Registry();
  readonly activeCalls = new Gauge({ name: 'parley_active_calls', help: 'Calls this node carries now', registers: [this.registry] });
  readonly eventLoopLag = new Gauge({
    name: 'parley_event_loop_lag_seconds',
    help: 'The longest the event loop ran late in the last second (every call and request shares it)',
    registers: [this.registry],
  });
  readonly halfOpenCalls = new Gauge({ name: 'parley_half_open_calls', help: 'Calls not yet connected (ICE + DTLS) this node holds now', registers: [this.registry] });
  readonly callsEnded = new Counter({
    name: 'parley_calls_ended_total',
    help: 'Calls ended, by final state, reason and transport (webrtc, websocket, sip)',
    labelNames: ['state', 'reason', 'transport'] as const,
    registers: [this.registry],
  });
  readonly answerSeconds = new Histogram({
    name: 'parley_offer_to_answer_seconds',
    help: 'Time from a calls request to its SDP answer',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  readonly webhookAttempts = new Counter({
    name: 'parley_webhook_attempts_total',
    help: 'Webhook delivery attempts by outcome: delivered, retry, failed (given up), disabled (410 Gone or endpoint removed)',
    labelNames: ['outcome'],
    registers: [this.registry],
  });
  readonly sipRouting = new Counter({
    name: 'parley_sip_routing_total',
    help: "What ringing SIP calls became (decision: accept, reject, refer, abandoned) and who decided (by: app, default_route, no_webhook — nobody receives realtime.call.incoming —, unannounced — the webhook could not be written —, caller — it hung up —; transfer: an answered call referred)",
    labelNames: ['decision', 'by'] as const,
    registers: [this.registry],
  });
  readonly videoFramesReceived = new Counter({
    name: 'parley_video_frames_received_total',
    help: "Video frames received from callers' cameras, assembled from their RTP packets (VP8, H.264)",
    registers: [this.registry],
  });
  readonly visionDecodeSeconds = new Histogram({
    name: 'parley_vision_decode_seconds',
    help: "From asking a caller's camera for a key frame to its picture decoded, scaled and encoded as JPEG (the end of a turn)",
    buckets: [0.025, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6],
    registers: [this.registry],
  });
  readonly visionFramesSent = new Counter({
    name: 'parley_vision_frames_sent_total',
    help: "Camera pictures put in a user message for the reply model (one per turn at most)",
    registers: [this.registry],
  });
  readonly tokensIssued = new Counter({ name: 'parley_tokens_issued_total', help: 'Ephemeral tokens minted', registers: [this.registry] });
  readonly rateLimited = new Counter({
    name: 'parley_rate_limited_total',
    help: 'Requests refused (429; SIP: 503) by a rate limit, by limit (cs-ip, cs-key, calls-token, demo-ip, sip-invite-ip, sip-register-ip, sip-outbound-key; concurrent calls: calls-key, calls-key-half-open, calls-token-concurrent; SIP connections past the share of their address: sip-tcp-ip; INVITEs and REGISTERs from an address in its wrong-password backoff: sip-auth-ip)',
    labelNames: ['limit'] as const,
    registers: [this.registry],
  });
  /** The voice agent's stages for one turn, by the call's model (params.model). */
  readonly endOfTurnWaitSeconds = this.stageHistogram('parley_end_of_turn_wait_seconds', "From the caller's last speech to the end of their turn being detected");
  readonly transcriptionSeconds = this.stageHistogram('parley_transcription_seconds', "From the end of the caller's turn to its final transcript");
  readonly firstTokenSeconds = this.stageHistogram('parley_first_token_seconds', 'From asking the reply model to its first text');
  readonly firstAudioSeconds = this.stageHistogram('parley_first_audio_seconds', "From the reply's first text to its first audio ready to send (speech synthesis of the first clause)");
  readonly voiceToVoiceSeconds = this.stageHistogram('parley_voice_to_voice_seconds', "From the caller's last speech to the reply's first audio queued for the caller");
  readonly stageFailures = new Counter({
    name: 'parley_stage_failures_total',
    help: "Call stage failures, by stage (vad, stt, llm, tts, media), each also an error event to the call's client",
    labelNames: ['stage'] as const,
    registers: [this.registry],
  });
  readonly sipRegistrationUp = new Gauge({
    name: 'parley_sip_registration_up',
    help: 'Whether an upstream SIP registration (SIP_REGISTRATIONS) is in force, by registrar and user',
    labelNames: ['registrar', 'user'] as const,
    registers: [this.registry],
  });
  readonly sipOutboundCalls = new Counter({
    name: 'parley_sip_outbound_calls_total',
    help: 'Outbound SIP call attempts and what became of them, by outcome: placed, refused (the toll-fraud guard, a limit, a bad destination), answered, busy, no_answer, unreachable, rejected, media_unacceptable',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly sipRegistrationFailures = new Counter({
    name: 'parley_sip_registration_failures_total',
    help: 'Upstream SIP registrations refused or unanswered, by registrar and user (each is retried with backoff)',
    labelNames: ['registrar', 'user'] as const,
    registers: [this.registry],
  });
  readonly turnUp = new Gauge({
    name: 'parley_turn_up',
    help: 'Whether a TURN server answered its last check (an allocation); 0 leaves it out of ice-config',
    labelNames: ['url'] as const,
    registers: [this.registry],
  });
  /** CallSession objects not yet garbage-collected: returns to 0 once calls end (a leak never does). */
  readonly callSessions = new LiveObjects();
  readonly callSessionsAlive: Gauge = new Gauge({
    name: 'parley_call_sessions_alive',
    help: 'CallSession objects still in memory (forces a full GC first when the process runs with --expose-gc)',
    registers: [this.registry],
    collect: async (): Promise<void> => this.callSessionsAlive.set(await this.callSessions.alive()),
  });
  readonly iceCandidatesDropped = new Counter({
    name: 'parley_ice_candidates_dropped_total',
    help: "Remote ICE candidates (offer.candidates or the SDP's a=candidate lines) refused by the candidate filter, by reason",
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly callsForwarded = new Counter({
    name: 'parley_calls_forwarded_total',
    help: 'Calls requests this node, at its limit or its load threshold, passed to another node, by the status that node answered and why (full, loaded)',
    labelNames: ['status', 'reason'] as const,
    registers: [this.registry],
  });
  readonly nodeLoad = new Gauge({
    name: 'parley_node_load',
    help: "This node's load (0-1, smoothed): the busiest of its event loop's busy share, the machine's cores' busy share, its loop lateness against 100 ms",
    registers: [this.registry],
  });
  readonly loadThreshold = new Gauge({
    name: 'parley_node_load_threshold',
    help: 'LOAD_THRESHOLD: the load at which this node takes no new calls (0: off)',
    registers: [this.registry],
  });
  readonly maxConcurrentCalls = new Gauge({
    name: 'parley_max_concurrent_calls',
    help: 'MAX_CONCURRENT_CALLS: the calls this node carries at most (beyond it, calls requests are passed to another node or answered 503)',
    registers: [this.registry],
  });
  readonly modelRequests = new Counter({
    name: 'parley_model_requests_total',
    help: "Requests to a model's upstream (kind: realtime for a realtime session or response; chat, transcription, speech for a cascade's services), by model and outcome (ok, error, timeout)",
    labelNames: ['model', 'kind', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly modelFailures = new Counter({
    name: 'parley_model_failures_total',
    help: "Calls whose model failed (an upstream refused, timed out or dropped), by catalogue model and error code",
    labelNames: ['model', 'code'] as const,
    registers: [this.registry],
  });
  readonly modelFallbacks = new Counter({
    name: 'parley_model_fallbacks_total',
    help: 'Calls handed from a model to its fallback (a failure mid-call, or its breaker open at the start), by model and fallback',
    labelNames: ['model', 'to'] as const,
    registers: [this.registry],
  });
  readonly modelBreakerOpen = new Gauge({
    name: 'parley_model_breaker_open',
    help: "1 while a model's circuit breaker is open (new calls go to its fallback), else 0",
    labelNames: ['model'] as const,
    registers: [this.registry],
  });
  readonly modelTokens = new Counter({
    name: 'parley_model_tokens_total',
    help: "Tokens an upstream model reported using (its usage per response), by model and kind (input, output)",
    labelNames: ['model', 'kind'] as const,
    registers: [this.registry],
  });
  readonly modelConnectSeconds = new Histogram({
    name: 'parley_model_connect_seconds',
    help: "Time an upstream realtime model took to accept a call's session, by model",
    labelNames: ['model'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5],
    registers: [this.registry],
  });
  /** Set once the checks exist (watchReadiness); until then the gauge has no series. */
  private readiness: ReadinessChecks | undefined;
  readonly readinessCheck: Gauge<'check' | 'state'> = new Gauge({
    name: 'parley_readiness_check',
    help: "Each /readyz check's state, asked at each scrape (check: database, redis, node, turn, speech, event_loop, load): 1 for the state it is in (starting, ready, degraded, failed), 0 for the others",
    labelNames: ['check', 'state'] as const,
    registers: [this.registry],
    collect: async (): Promise<void> => {
      if (!this.readiness) return;
      const { checks } = await this.readiness.evaluate();
      for (const [check, health] of Object.entries(checks)) {
        for (const state of HEALTH_STATES) this.readinessCheck.set({ check, state }, health.state === state ? 1 : 0);
      }
    },
  });
  readonly opusComplexity = new Gauge({
    name: 'parley_opus_complexity',
    help: "The Opus encoders' complexity now (OPUS_COMPLEXITY, lowered under load down to OPUS_MIN_COMPLEXITY)",
    registers: [this.registry],
  });

  /** One observation per call at its end, by transport (calls/callFigures.ts says what each figure is). */
  readonly callPacketLoss = new Histogram({
    name: 'parley_call_packet_loss_ratio',
    help: "Each call's share of the caller's packets lost on the way (0–1), by transport (webrtc only: a WebSocket loses none)",
    labelNames: ['transport'] as const,
    buckets: [0, 0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5],
    registers: [this.registry],
  });
  readonly callJitterSeconds = new Histogram({
    name: 'parley_call_jitter_seconds',
    help: "Each call's 95th percentile of the caller's interarrival jitter (RFC 3550), by transport",
    labelNames: ['transport'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2],
    registers: [this.registry],
  });
  readonly callRttSeconds = new Histogram({
    name: 'parley_call_rtt_seconds',
    help: "Each call's 95th percentile of the round-trip time measured from the caller's RTCP reports, by transport",
    labelNames: ['transport'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 1],
    registers: [this.registry],
  });
  readonly callTimeToConnectedSeconds = new Histogram({
    name: 'parley_call_time_to_connected_seconds',
    help: "Each call's time from its request admitted to its transport connected (ICE and DTLS up; a socket accepted), by transport",
    labelNames: ['transport'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10],
    registers: [this.registry],
  });
  readonly callAudioSeconds = new Counter({
    name: 'parley_call_audio_seconds_total',
    help: "Seconds of audio in ended calls, by direction (caller: received from the caller; agent: the agent's speech sent) and transport",
    labelNames: ['direction', 'transport'] as const,
    registers: [this.registry],
  });
  readonly noiseReductionCalls = new Gauge({
    name: 'parley_noise_reduction_calls',
    help: "Connected calls by the noise suppression their session runs now (type: near_field, far_field, off)",
    labelNames: ['type'] as const,
    registers: [this.registry],
  });
  readonly callModelTokens = new Counter({
    name: 'parley_call_model_tokens_total',
    help: "Model tokens of ended calls' replies, by kind (input, output)",
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  /** Under PARLEY_WORKERS: every worker's metrics, summed (through the primary). */
  private readonly everyWorker = cluster.isWorker ? clusterMetricsReader(this.registry) : undefined;

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'parley_' });
    for (const type of ['near_field', 'far_field', 'off']) this.noiseReductionCalls.set({ type }, 0);
  }

  /** parley_readiness_check reports these checks (those of GET /readyz). */
  watchReadiness(checks: ReadinessChecks): void {
    this.readiness = checks;
  }

  /** The exposition text: this process's, or under PARLEY_WORKERS every worker's summed unless `thisWorkerOnly`. */
  exposition(thisWorkerOnly = false): Promise<string> {
    return this.everyWorker && !thisWorkerOnly ? this.everyWorker() : this.registry.metrics();
  }

  private stageHistogram(name: string, help: string): Histogram<'model'> {
    return new Histogram({ name, help, labelNames: ['model'] as const, buckets: STAGE_BUCKETS, registers: [this.registry] });
  }
}
