// Creates calls from offers, enforces the node's call limits and drains calls on shutdown.
import type { FastifyBaseLogger } from 'fastify';
import type { AgentFactory, ConversationTurn } from '../agent/types.js';
import { randomId } from '../auth/ids.js';
import type { Metrics } from '../observability/metrics.js';
import { Conversation, newItemId } from '../session/conversation.js';
import type { Session } from '../session/session.js';
import type { ConversationStore } from '../storage/conversations.js';
import { Call } from './call.js';
import { CallRecord } from './callRecord.js';
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

/** The WebRTC stack refused the offer (a client error, answered 422). */
export class OfferRejected extends Error {}

/** The node cannot take another call now (answered 503 with Retry-After). */
export class CallCapacityExceeded extends Error {}

export class CallManager {
  private readonly calls = new Map<string, Call>();
  /** Calls being set up (answer not yet sent) count against the limit too. */
  private starting = 0;
  private draining = false;

  constructor(
    private readonly peers: PeerFactory,
    private readonly conversations: ConversationStore,
    private readonly agentFor: (model: string) => AgentFactory,
    private readonly protocols: Record<ProtocolName, ProtocolFactory>,
    private readonly limits: CallLimits,
    private readonly log: FastifyBaseLogger,
    private readonly metrics?: Metrics,
  ) {}

  get activeCount(): number {
    return this.calls.size;
  }

  /** A call this node carries, by id. */
  get(id: string): Call | undefined {
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
      const threadId = req.resume?.threadId ?? id;
      const history = req.resume?.history ?? [];
      const peer = this.peers.create(id);
      const call = new Call({
        id,
        apiKeyId: req.apiKeyId,
        peer,
        plan: req.plan,
        session: req.session,
        conversation: conversationOf(history),
        agentFor: this.agentFor,
        protocol: req.protocol,
        protocols: this.protocols,
        record: new CallRecord(this.conversations, id, threadId, history.length, this.log),
        timeouts: this.limits,
        log: this.log,
        ...(this.limits.opusComplexity !== undefined ? { opusComplexity: this.limits.opusComplexity } : {}),
      });
      let answerSdp: string;
      try {
        answerSdp = await peer.answer({
          offerSdp: req.offerSdp,
          plan: req.plan,
          candidates: req.candidates,
          audioSsrc: call.audioSsrc,
          receiveVideo: req.session.modalities.includes('video'),
        });
      } catch (err) {
        void call.end('offer_rejected', 'failed');
        throw new OfferRejected((err as Error).message);
      }
      await this.conversations.create({ id, apiKeyId: req.apiKeyId, threadId, endUser: req.endUser, params: req.session });
      this.calls.set(id, call);
      this.metrics?.activeCalls.set(this.calls.size);
      stopTimer?.();
      call.onEnd((s) => {
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
