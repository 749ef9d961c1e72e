// Creates calls from offers (their candidates filtered first), enforces the node's call limits,
// records which node carries each call, and drains calls on shutdown.
import type { FastifyBaseLogger } from 'fastify';
import type { AgentFactory, ConversationTurn } from '../agent/types.js';
import { randomId } from '../auth/ids.js';
import type { Metrics } from '../observability/metrics.js';
import { Conversation, newItemId } from '../session/conversation.js';
import type { Session } from '../session/session.js';
import type { ConversationStore } from '../storage/conversations.js';
import { Call } from './call.js';
import { CallRecord } from './callRecord.js';
import type { CandidateFilter } from './candidateFilter.js';
import type { CallTimeouts } from './lifecycle.js';
import type { PeerFactory, RemoteCandidate } from './peer/types.js';
import type { ProtocolFactory, ProtocolName } from './protocol/types.js';
import type { OfferPlan } from './sdpOffer.js';

export interface CallRequest {
  apiKeyId: string;
  endUser: string | null;
  offerSdp: string;
  plan: OfferPlan;
  candidates: RemoteCandidate[];
  session: Session;
  /** The wire protocol of the route the offer came through. */
  protocol: ProtocolName;
  /** Resume this earlier conversation's thread (its history becomes the agent's context). */
  resume?: { threadId: string; history: ConversationTurn[] };
}

export interface CallLimits extends CallTimeouts {
  maxConcurrentCalls: number;
  /** Opus encoder complexity of the agents' voices (OPUS_COMPLEXITY). */
  opusComplexity?: number;
}

export interface CallManagerOptions {
  peers: PeerFactory;
  conversations: ConversationStore;
  agentFor: (model: string) => AgentFactory;
  protocols: Record<ProtocolName, ProtocolFactory>;
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
  private readonly calls = new Map<string, Call>();
  /** Calls being set up (answer not yet sent) count against the limit too. */
  private starting = 0;
  private draining = false;

  constructor(private readonly opts: CallManagerOptions) {}

  get activeCount(): number {
    return this.calls.size;
  }

  /** At the call limit (calls being set up included): another call would be refused. */
  get isFull(): boolean {
    return this.calls.size + this.starting >= this.opts.limits.maxConcurrentCalls;
  }

  /** True from the start of a shutdown drain: new work is refused. */
  get isDraining(): boolean {
    return this.draining;
  }

  /** A call this node carries, by id. */
  get(id: string): Call | undefined {
    return this.calls.get(id);
  }

  /** Answers the offer and starts the call. */
  async create(req: CallRequest): Promise<{ answerSdp: string; conversationId: string }> {
    const { metrics, log, limits } = this.opts;
    if (this.draining) throw new CallCapacityExceeded('The server is shutting down; try another node.');
    if (this.isFull) {
      throw new CallCapacityExceeded('This server is at its limit of concurrent calls; retry shortly.');
    }
    this.starting++;
    const stopTimer = metrics.answerSeconds.startTimer();
    try {
      const id = randomId('conv_');
      const threadId = req.resume?.threadId ?? id;
      const history = req.resume?.history ?? [];
      const offer = this.opts.candidates.filterOffer(req.offerSdp, req.candidates);
      for (const d of offer.dropped) metrics.iceCandidatesDropped.inc({ reason: d.reason });
      log.debug({ conversation: id, given: offer.given, dropped: offer.dropped }, 'remote candidates given to the WebRTC stack');
      const peer = this.opts.peers.create(id);
      const call = new Call({
        id,
        apiKeyId: req.apiKeyId,
        peer,
        plan: req.plan,
        session: req.session,
        conversation: conversationOf(history),
        agentFor: this.opts.agentFor,
        protocol: req.protocol,
        protocols: this.opts.protocols,
        record: new CallRecord(this.opts.conversations, id, threadId, history.length, log),
        timeouts: limits,
        log,
        ...(limits.opusComplexity !== undefined ? { opusComplexity: limits.opusComplexity } : {}),
      });
      metrics.callSessions.track(call);
      let answerSdp: string;
      try {
        answerSdp = await peer.answer({
          offerSdp: offer.sdp,
          plan: req.plan,
          candidates: offer.candidates,
          audioSsrc: call.audioSsrc,
          receiveVideo: req.session.modalities.includes('video'),
        });
      } catch (err) {
        void call.end('offer_rejected', 'failed');
        throw new OfferRejected((err as Error).message);
      }
      try {
        await this.opts.conversations.create({ id, apiKeyId: req.apiKeyId, threadId, endUser: req.endUser, params: req.session, nodeId: this.opts.nodeId });
      } catch (err) {
        // No record, no call (the client gets 503 and retries).
        void call.end('not_recorded', 'failed');
        throw err;
      }
      if (this.draining) {
        void call.end('server_shutdown', 'failed');
        throw new CallCapacityExceeded('The server is shutting down; try another node.');
      }
      this.calls.set(id, call);
      metrics.activeCalls.set(this.calls.size);
      stopTimer();
      call.onEnd((c) => {
        this.calls.delete(c.id);
        metrics.activeCalls.set(this.calls.size);
        metrics.callsEnded.inc({ state: c.state, reason: c.endReason ?? 'unknown' });
      });
      log.info({ conversation: id }, 'call created');
      return { answerSdp, conversationId: id };
    } finally {
      this.starting--;
    }
  }

  /**
   * Stops taking calls and ends every live one (server shutdown); resolves once all are recorded.
   * A call that never connected is recorded failed (its lifecycle says so), like one that timed out.
   */
  async drain(reason = 'server_shutdown'): Promise<void> {
    this.draining = true;
    await Promise.all([...this.calls.values()].map((c) => c.end(reason)));
  }
}

/** A resumed thread's turns as the conversation a call starts from. */
function conversationOf(history: ConversationTurn[]): Conversation {
  const conversation = new Conversation();
  for (const turn of history) {
    conversation.add(
      turn.role === 'user'
        ? { id: newItemId(), type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text: turn.text }] }
        : { id: newItemId(), type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: turn.text }] },
    );
  }
  return conversation;
}
