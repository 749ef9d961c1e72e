// Creates calls from offers and keeps each one's peer alive until it ends, recording its lifecycle.
import type { FastifyBaseLogger } from 'fastify';
import { randomId } from '../auth/ids.js';
import type { ConversationStore } from '../storage/conversations.js';
import type { PeerFactory, PeerState, RemoteCandidate, ServerPeer } from './peer/types.js';
import type { OfferPlan } from './sdpOffer.js';
import type { SessionParams } from './sessionParams.js';

export interface CallRequest {
  apiKeyId: string;
  endUser: string | null;
  offerSdp: string;
  plan: OfferPlan;
  candidates: RemoteCandidate[];
  params: SessionParams;
}

export interface CallLimits {
  connectTimeoutMs: number;
}

/** The WebRTC stack refused the offer (a client error, answered 422). */
export class OfferRejected extends Error {}

export class Call {
  private connectTimer: NodeJS.Timeout | undefined;
  private ended = false;
  state: 'connecting' | 'active' | 'ended' | 'failed' = 'connecting';

  constructor(
    readonly id: string,
    readonly peer: ServerPeer,
    readonly params: SessionParams,
    private readonly onEnd: (call: Call, state: 'ended' | 'failed', reason: string) => void,
  ) {}

  armConnectTimeout(ms: number): void {
    this.connectTimer = setTimeout(() => this.end('failed', 'connect_timeout'), ms);
  }

  connected(): void {
    clearTimeout(this.connectTimer);
    this.state = 'active';
  }

  end(state: 'ended' | 'failed', reason: string): void {
    if (this.ended) return;
    this.ended = true;
    this.state = state;
    clearTimeout(this.connectTimer);
    this.peer.close();
    this.onEnd(this, state, reason);
  }
}

export class CallManager {
  private readonly calls = new Map<string, Call>();

  constructor(
    private readonly peers: PeerFactory,
    private readonly conversations: ConversationStore,
    private readonly limits: CallLimits,
    private readonly log: FastifyBaseLogger,
  ) {}

  get activeCount(): number {
    return this.calls.size;
  }

  get(id: string): Call | undefined {
    return this.calls.get(id);
  }

  /** Answers the offer and starts the call. Throws if the stack rejects the offer. */
  async create(req: CallRequest): Promise<{ answerSdp: string; conversationId: string }> {
    const id = randomId('conv_');
    const peer = this.peers.create(id);
    const call = new Call(id, peer, req.params, (c, state, reason) => this.finish(c, state, reason));
    let answerSdp: string;
    try {
      peer.onStateChange((s) => this.onPeerState(call, s));
      answerSdp = await peer.answer({
        offerSdp: req.offerSdp,
        plan: req.plan,
        candidates: req.candidates,
        receiveVideo: req.params.modalities.includes('video'),
      });
    } catch (err) {
      peer.close();
      throw new OfferRejected((err as Error).message);
    }
    await this.conversations.create({ id, apiKeyId: req.apiKeyId, endUser: req.endUser, params: req.params });
    this.calls.set(id, call);
    call.armConnectTimeout(this.limits.connectTimeoutMs);
    this.log.info({ conversation: id }, 'call created');
    return { answerSdp, conversationId: id };
  }

  private onPeerState(call: Call, state: PeerState): void {
    if (state === 'connected' && call.state === 'connecting') {
      call.connected();
      void this.conversations.markActive(call.id).catch((err) => this.log.error({ err, conversation: call.id }, 'record failed'));
      this.log.info({ conversation: call.id }, 'call connected');
    } else if (state === 'failed') {
      call.end(call.state === 'connecting' ? 'failed' : 'ended', 'ice_failed');
    } else if (state === 'disconnected' || state === 'closed') {
      call.end(call.state === 'connecting' ? 'failed' : 'ended', 'peer_disconnected');
    }
  }

  private finish(call: Call, state: 'ended' | 'failed', reason: string): void {
    this.calls.delete(call.id);
    this.log.info({ conversation: call.id, state, reason }, 'call ended');
    void this.conversations.finish(call.id, state, reason).catch((err) => this.log.error({ err, conversation: call.id }, 'record failed'));
  }

  /** Ends every live call (server shutdown). */
  endAll(reason: string): void {
    for (const call of [...this.calls.values()]) call.end('ended', reason);
  }
}
