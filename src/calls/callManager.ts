// Creates calls from offers (their candidates filtered first), enforces the node's call limits,
// records which node carries each call, and drains calls on shutdown.
import type { FastifyBaseLogger } from 'fastify';
import type { AgentFactory, ConversationTurn } from '../agent/types.js';
import { randomId } from '../auth/ids.js';
import type { Metrics } from '../observability/metrics.js';
import type { ConversationStore } from '../storage/conversations.js';
import type { CandidateFilter } from './candidateFilter.js';
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
}

export interface CallManagerOptions {
  peers: PeerFactory;
  conversations: ConversationStore;
  agentFor: (params: SessionParams) => AgentFactory;
  limits: CallLimits;
  /** The node recorded as carrying the calls. */
  nodeId: string;
  candidates: CandidateFilter;
  log: FastifyBaseLogger;
  metrics: Metrics;
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

  constructor(private readonly opts: CallManagerOptions) {}

  get activeCount(): number {
    return this.calls.size;
  }

  /** True from the start of a shutdown drain: new work is refused. */
  get isDraining(): boolean {
    return this.draining;
  }

  /** Answers the offer and starts the call. */
  async create(req: CallRequest): Promise<{ answerSdp: string; conversationId: string }> {
    const { metrics, log } = this.opts;
    if (this.draining) throw new CallCapacityExceeded('The server is shutting down; try another node.');
    if (this.calls.size + this.starting >= this.opts.limits.maxConcurrentCalls) {
      throw new CallCapacityExceeded('This server is at its limit of concurrent calls; retry shortly.');
    }
    this.starting++;
    const stopTimer = metrics.answerSeconds.startTimer();
    try {
      const id = randomId('conv_');
      const offer = this.opts.candidates.filterOffer(req.offerSdp, req.candidates);
      for (const d of offer.dropped) metrics.iceCandidatesDropped.inc({ reason: d.reason });
      log.debug({ conversation: id, given: offer.given, dropped: offer.dropped }, 'remote candidates given to the WebRTC stack');
      const peer = this.opts.peers.create(id);
      const session = new CallSession({
        id,
        threadId: req.resume?.threadId ?? id,
        peer,
        plan: req.plan,
        params: req.params,
        history: req.resume?.history ?? [],
        agentFor: this.opts.agentFor,
        conversations: this.opts.conversations,
        timeouts: this.opts.limits,
        log,
      });
      metrics.callSessions.track(session);
      let answerSdp: string;
      try {
        answerSdp = await peer.answer({
          offerSdp: offer.sdp,
          plan: req.plan,
          candidates: offer.candidates,
          audioSsrc: session.audioSsrc,
          receiveVideo: req.params.modalities.includes('video'),
        });
      } catch (err) {
        void session.end('failed', 'offer_rejected');
        throw new OfferRejected((err as Error).message);
      }
      try {
        await this.opts.conversations.create({
          id,
          apiKeyId: req.apiKeyId,
          threadId: req.resume?.threadId ?? id,
          endUser: req.endUser,
          params: req.params,
          nodeId: this.opts.nodeId,
        });
      } catch (err) {
        // No record, no call (the client gets 503 and retries).
        void session.end('failed', 'not_recorded');
        throw err;
      }
      if (this.draining) {
        void session.end('failed', 'server_shutdown');
        throw new CallCapacityExceeded('The server is shutting down; try another node.');
      }
      this.calls.set(id, session);
      metrics.activeCalls.set(this.calls.size);
      stopTimer();
      session.onEnd((s) => {
        this.calls.delete(s.id);
        metrics.activeCalls.set(this.calls.size);
        metrics.callsEnded.inc({ state: s.state, reason: s.endReason ?? 'unknown' });
      });
      log.info({ conversation: id }, 'call created');
      return { answerSdp, conversationId: id };
    } finally {
      this.starting--;
    }
  }

  /**
   * Stops taking calls and ends every live one (server shutdown); resolves once all are recorded.
   * A call that never connected is recorded failed, like one that timed out connecting.
   */
  async drain(reason = 'server_shutdown'): Promise<void> {
    this.draining = true;
    await Promise.all([...this.calls.values()].map((c) => c.end(c.state === 'connecting' ? 'failed' : 'ended', reason)));
  }
}
