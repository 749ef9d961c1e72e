// Creates calls from offers, enforces the node's call limits and drains calls on shutdown.
import type { FastifyBaseLogger } from 'fastify';
import type { AgentFactory, ConversationTurn } from '../agent/types.js';
import { randomId } from '../auth/ids.js';
import type { Metrics } from '../observability/metrics.js';
import type { ConversationStore } from '../storage/conversations.js';
import { CallSession, type CallTimeouts } from './callSession.js';
import type { PeerFactory, RemoteCandidate } from './peer/types.js';
import type { OfferPlan } from './sdpOffer.js';
import type { SessionParams } from '../session/params.js';

export interface CallRequest {
  apiKeyId: string;
  endUser: string | null;
  offerSdp: string;
  plan: OfferPlan;
  candidates: RemoteCandidate[];
  params: SessionParams;
  /** Resume this earlier conversation's thread (its history becomes the agent's context). */
  resume?: { threadId: string; history: ConversationTurn[] };
}

export interface CallLimits extends CallTimeouts {
  maxConcurrentCalls: number;
  /** Opus encoder complexity of the agents' voices (OPUS_COMPLEXITY). */
  opusComplexity?: number;
}

/** The WebRTC stack refused the offer (a client error, answered 422). */
export class OfferRejected extends Error {}

/** The node cannot take another call now (answered 503 with Retry-After). */
export class CallCapacityExceeded extends Error {}

export class CallManager {
  private readonly calls = new Map<string, CallSession>();
  /** Calls being set up (answer not yet sent) count against the limit too. */
  private starting = 0;
  private draining = false;

  constructor(
    private readonly peers: PeerFactory,
    private readonly conversations: ConversationStore,
    private readonly agentFor: (params: SessionParams) => AgentFactory,
    private readonly limits: CallLimits,
    private readonly log: FastifyBaseLogger,
    private readonly metrics?: Metrics,
  ) {}

  get activeCount(): number {
    return this.calls.size;
  }

  get(id: string): CallSession | undefined {
    return this.calls.get(id);
  }

  /** Answers the offer and starts the call. */
  async create(req: CallRequest): Promise<{ answerSdp: string; conversationId: string }> {
    if (this.draining) throw new CallCapacityExceeded('The server is shutting down; try another node.');
    if (this.calls.size + this.starting >= this.limits.maxConcurrentCalls) {
      throw new CallCapacityExceeded('This server is at its limit of concurrent calls; retry shortly.');
    }
    this.starting++;
    const stopTimer = this.metrics?.answerSeconds.startTimer();
    try {
      const id = randomId('conv_');
      const peer = this.peers.create(id);
      const session = new CallSession({
        id,
        threadId: req.resume?.threadId ?? id,
        peer,
        plan: req.plan,
        params: req.params,
        history: req.resume?.history ?? [],
        agentFor: this.agentFor,
        conversations: this.conversations,
        timeouts: this.limits,
        log: this.log,
        opusComplexity: this.limits.opusComplexity,
      });
      let answerSdp: string;
      try {
        answerSdp = await peer.answer({
          offerSdp: req.offerSdp,
          plan: req.plan,
          candidates: req.candidates,
          audioSsrc: session.audioSsrc,
          receiveVideo: req.params.modalities.includes('video'),
        });
      } catch (err) {
        void session.end('failed', 'offer_rejected');
        throw new OfferRejected((err as Error).message);
      }
      await this.conversations.create({ id, apiKeyId: req.apiKeyId, threadId: req.resume?.threadId ?? id, endUser: req.endUser, params: req.params });
      this.calls.set(id, session);
      this.metrics?.activeCalls.set(this.calls.size);
      stopTimer?.();
      session.onEnd((s) => {
        this.calls.delete(s.id);
        this.metrics?.activeCalls.set(this.calls.size);
        this.metrics?.callsEnded.inc({ state: s.state, reason: s.endReason ?? 'unknown' });
      });
      this.log.info({ conversation: id }, 'call created');
      return { answerSdp, conversationId: id };
    } finally {
      this.starting--;
    }
  }

  /** Stops taking calls and ends every live one (server shutdown); resolves once all are recorded. */
  async drain(reason = 'server_shutdown'): Promise<void> {
    this.draining = true;
    await Promise.all([...this.calls.values()].map((c) => c.end('ended', reason)));
  }
}
