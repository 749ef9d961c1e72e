// One live call, composed of its parts: the server's peer, its media (mediaSession.ts), its
// lifecycle (lifecycle.ts), the agent (agentHost.ts), the client's protocol on the data channel
// (protocol/) and its record in the store (callRecord.ts). This class wires them and implements
// the commands a protocol may give (CallControl).
import type { FastifyBaseLogger } from 'fastify';
import type { AgentFactory, ConversationTurn, Refusal, ResponseRequest } from '../agent/types.js';
import { Conversation, itemText, type Item, type PlaceResult } from '../session/conversation.js';
import type { CallEvent } from '../session/events.js';
import type { Session } from '../session/session.js';
import { AgentHost } from './agentHost.js';
import type { CallRecord } from './callRecord.js';
import { CallLifecycle, type CallState, type CallTimeouts } from './lifecycle.js';
import { MediaSession } from './mediaSession.js';
import type { MessageChannel, PeerState, ServerPeer } from './peer/types.js';
import type { CallControl, ClientProtocol, ProtocolFactory, ProtocolName } from './protocol/types.js';
import type { OfferPlan } from './sdpOffer.js';

/** Data-channel labels of the known clients, and the protocol each speaks. */
const PROTOCOL_OF_LABEL: Record<string, ProtocolName> = { 'orga-realtime-client-events': 'orga', 'oai-events': 'openai' };

/** How long a closed event channel waits for its peer's own close before it ends the call. */
const CHANNEL_CLOSE_GRACE_MS = 2000;

/** Events held while the client's channel is not open yet. */
const PENDING_EVENTS_LIMIT = 200;

export interface CallOptions {
  id: string;
  /** The API key the call was opened under (its owner). */
  apiKeyId: string;
  peer: ServerPeer;
  plan: OfferPlan;
  session: Session;
  /** The conversation so far (a resumed thread's turns, or empty). */
  conversation: Conversation;
  agentFor: (model: string) => AgentFactory;
  /** The protocol of the route the call came through; a known channel label overrides it. */
  protocol: ProtocolName;
  protocols: Record<ProtocolName, ProtocolFactory>;
  record: CallRecord;
  timeouts: CallTimeouts;
  log: FastifyBaseLogger;
  /** Opus encoder complexity of the agent's voice (OPUS_COMPLEXITY). */
  opusComplexity?: number;
}

export class Call implements CallControl {
  readonly id: string;
  readonly apiKeyId: string;
  readonly conversation: Conversation;
  private current: Session;
  private readonly peer: ServerPeer;
  private readonly media: MediaSession;
  private readonly lifecycle: CallLifecycle;
  private readonly host: AgentHost;
  private protocol: ClientProtocol | undefined;
  private channel: MessageChannel | undefined;
  private pending: CallEvent[] = [];
  private finished: Promise<void> | undefined;
  private readonly endListeners: ((call: Call) => void)[] = [];

  constructor(private readonly opts: CallOptions) {
    this.id = opts.id;
    this.apiKeyId = opts.apiKeyId;
    this.peer = opts.peer;
    this.current = opts.session;
    this.conversation = opts.conversation;
    this.lifecycle = new CallLifecycle(opts.timeouts, (state, reason) => void this.close(state, reason));
    this.media = new MediaSession(opts.peer, opts.plan, opts.opusComplexity, {
      audio: (frame) => this.host.agent.onAudio(frame),
      video: (frame) => {
        if (this.current.modalities.includes('video')) this.host.agent.onVideoFrame?.(frame);
      },
      activity: () => this.lifecycle.activity(),
      failure: (err) => this.mediaFailed(err),
    });
    this.host = new AgentHost(
      {
        conversationId: this.id,
        session: () => this.current,
        audio: this.media.audioOut,
        conversation: this.conversation,
        emit: (event) => this.emit(event),
        recordTurn: (turn) => this.recordTurn(turn),
      },
      opts.agentFor,
    );
    this.peer.onStateChange((s) => this.onPeerState(s));
    this.peer.onDataChannel((ch) => this.onChannel(ch));
  }

  get state(): CallState {
    return this.lifecycle.state;
  }

  get endReason(): string | undefined {
    return this.lifecycle.endReason;
  }

  get audioSsrc(): number {
    return this.media.audioSsrc;
  }

  onEnd(cb: (call: Call) => void): void {
    this.endListeners.push(cb);
  }

  // CallControl

  session(): Session {
    return this.current;
  }

  updateSession(next: Session): void {
    this.current = next;
    this.host.sessionChanged();
    this.opts.record.sessionChanged(next);
  }

  addItem(item: Item, after?: string | null): PlaceResult {
    const placed = this.conversation.add(item, after);
    if (!placed.ok) return placed;
    this.emit({ type: 'item.added', item, previousItemId: placed.previousItemId });
    this.emit({ type: 'item.done', item, previousItemId: placed.previousItemId });
    if (item.type === 'message' && (item.role === 'user' || item.role === 'assistant')) {
      const text = itemText(item);
      if (text) this.recordTurn({ role: item.role, text });
    }
    return placed;
  }

  deleteItem(id: string): boolean {
    if (!this.conversation.delete(id)) return false;
    this.emit({ type: 'item.deleted', itemId: id });
    return true;
  }

  truncateItem(id: string, audioEndMs: number): { ok: true } | { ok: false; message: string } {
    const cut = this.conversation.truncate(id, audioEndMs);
    if (!cut.ok) return cut;
    this.emit({ type: 'item.truncated', itemId: id, contentIndex: 0, audioEndMs });
    return { ok: true };
  }

  createResponse(request?: ResponseRequest): Refusal {
    return this.host.agent.createResponse(request);
  }

  cancelResponse(): boolean {
    return this.host.agent.cancelResponse();
  }

  clearOutputAudio(): void {
    this.host.agent.clearOutputAudio();
  }

  commitInput(): Refusal {
    return this.host.agent.commitInput();
  }

  clearInput(): void {
    this.host.agent.clearInput();
  }

  end(reason: string, state: 'ended' | 'failed' = 'ended'): Promise<void> {
    this.lifecycle.end(state, reason);
    return this.finished ?? Promise.resolve();
  }

  logFailure(err: Error): void {
    this.opts.log.error({ err, conversation: this.id }, 'client message handling failed');
  }

  // Wiring

  private onPeerState(state: PeerState): void {
    if (state === 'connected') {
      if (!this.lifecycle.connected()) return;
      this.media.start();
      this.opts.record.connected();
      this.opts.log.info({ conversation: this.id }, 'call connected');
    } else if (state === 'failed') {
      this.lifecycle.lost('ice_failed');
    } else if (state === 'disconnected' || state === 'closed') {
      // libdatachannel reports the peer's DTLS close (its pc.close()) as disconnected.
      this.lifecycle.lost('hangup');
    }
  }

  private onChannel(channel: MessageChannel): void {
    // The first channel the client opens carries events, unless a known client's channel follows.
    if (this.channel && !PROTOCOL_OF_LABEL[channel.label]) return;
    this.channel = channel;
    const name = PROTOCOL_OF_LABEL[channel.label] ?? this.opts.protocol;
    const protocol = this.opts.protocols[name](this, (message) => channel.send(JSON.stringify(message)));
    this.protocol = protocol;
    channel.onMessage((text) => {
      this.lifecycle.activity();
      protocol.receive(text);
    });
    channel.onClose(() => {
      // A client hanging up closes its channel too (its peer's close follows); a session whose
      // event channel is gone while its peer stays cannot go on.
      setTimeout(() => {
        if (!this.lifecycle.ended && this.channel === channel) this.lifecycle.end('ended', 'data_channel_closed');
      }, CHANNEL_CLOSE_GRACE_MS).unref();
    });
    protocol.opened();
    for (const event of this.pending.splice(0)) protocol.deliver(event);
    // A channel that opens in the moment between the call's end and its peer's close is told too.
    if (this.lifecycle.ended) protocol.ended(this.lifecycle.endReason!);
  }

  /** The media path threw: said to the client, logged, and the call ends (its audio cannot be trusted). */
  private mediaFailed(err: Error): void {
    if (this.lifecycle.ended) return;
    this.opts.log.error({ err, conversation: this.id }, 'media path failed');
    this.emit({ type: 'error', kind: 'server_error', code: 'media_failed', message: 'The call\'s media failed on the server; the call ends.' });
    this.lifecycle.end('failed', 'media_failed');
  }

  private emit(event: CallEvent): void {
    if (this.protocol) this.protocol.deliver(event);
    else if (this.pending.length < PENDING_EVENTS_LIMIT) this.pending.push(event);
  }

  private recordTurn(turn: ConversationTurn): void {
    if (this.current.history) this.opts.record.turn(turn);
  }

  /** The end, once: tell the client, stop media and the agent, close the peer, record it. */
  private close(state: 'ended' | 'failed', reason: string): Promise<void> {
    this.media.stop();
    this.host.close();
    this.protocol?.ended(reason);
    this.finished = (async () => {
      // The goodbye event gets 100 ms to leave. Never synchronous up to here, so a stack that
      // reports `closed` from inside peer.close() finds the call ended and cannot end it twice.
      await new Promise((r) => setTimeout(r, this.channel && reason !== 'hangup' ? 100 : 0));
      this.peer.close();
      for (const cb of this.endListeners) cb(this);
      this.opts.log.info({ conversation: this.id, state, reason }, 'call ended');
      await this.opts.record.finished(state, reason);
    })();
    return this.finished;
  }
}
