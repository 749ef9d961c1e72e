// Creates calls on the transports their requests bring, admits them (admission.ts: the node's,
// each key's, across the nodes with Redis, and each token's limits, the half-open budget), records which node carries each call,
// and drains calls on shutdown. It knows no wire: a request's
// transport is made for the call's id and accepted (for WebRTC, an SDP answer) here. The doors
// open their calls through door.ts, which answers its refusals in one union.
import type { FastifyBaseLogger } from 'fastify';
import type { ConversationTurn, ModelChooser } from '../agent/types.js';
import { randomId } from '../system/ids.js';
import type { Metrics } from '../observability/metrics.js';
import { startCallTrace } from '../observability/callTrace.js';
import type { SpanParent } from '../observability/tracing.js';
import { Conversation, newItemId } from '../session/conversation.js';
import { withoutSecrets, type Session } from '../session/session.js';
import type { ConversationStore } from '../storage/conversations.js';
import { CallCapacityExceeded, type Admission, type AdmitOptions } from './admission.js';
import { Call, type CallObserver, type CallRates } from './call.js';
import { callLog, callMetrics } from './callObservers.js';
import { callTracing } from './callTracing.js';
import { CallRecord } from './callRecord.js';
import { recordingObserver } from './callRecording.js';
import type { Recordings } from '../recordings/recordings.js';
import type { CallTimeouts } from './lifecycle.js';
import type { ProtocolFactory, ProtocolName } from './protocol/types.js';
import type { MessageChannel, PendingTransport } from './transport.js';

export interface CallRequest {
  apiKeyId: string;
  /** The ephemeral token's id (jti): its calls are counted (admission.ts). */
  tokenId: string;
  /** Connecting, the call counts against this half-open budget of its door's own (admission.ts), not the node's and the key's. */
  halfOpenBudget?: string;
  endUser: string | null;
  session: Session;
  /** The event protocol the client speaks (from the route its request came through); none on a wire with no client channel (a phone). */
  protocol?: ProtocolName;
  /** How long it may take to connect, when not the node's CALL_CONNECT_TIMEOUT_MS (an outbound phone call rings first). */
  connectTimeoutMs?: number;
  /** Resume this earlier conversation's thread (its history becomes the agent's context). */
  resume?: { threadId: string; history: ConversationTurn[] };
}

export interface CallManagerOptions {
  conversations: ConversationStore;
  /** The catalogue's models (which agent runs a call, and its fallbacks). */
  models: ModelChooser;
  protocols: Record<ProtocolName, ProtocolFactory>;
  timeouts: CallTimeouts;
  /** What each call's client may ask for a second. */
  rates: CallRates;
  /** Who may open another call: node, half-open, per-key and per-token limits. */
  admission: Admission;
  /** The node recorded as carrying the calls. */
  nodeId: string;
  log: FastifyBaseLogger;
  metrics: Metrics;
  /** What else listens to each call (webhooks), one observer per call from each. */
  observers?: (() => CallObserver)[];
  /** Which calls are recorded, and their recorders. */
  recordings: Recordings;
  /** Where each call's trace begins (observability/tracing.ts); none: calls are not traced. */
  traceRoot?: SpanParent;
}

export { CallCapacityExceeded, CallLimitExceeded } from './admission.js';

export class CallManager {
  private readonly calls = new Map<string, Call>();
  private draining = false;

  constructor(private readonly opts: CallManagerOptions) {}

  get activeCount(): number {
    return this.calls.size;
  }

  /** No room for anyone's call (calls being set up included): another call would be refused. */
  get isFull(): boolean {
    return this.opts.admission.isFull;
  }

  /** The calls this node carries now. */
  liveCalls(): IterableIterator<Call> {
    return this.calls.values();
  }

  /** True from the start of a shutdown drain: new work is refused. */
  /** The catalogue's models (which a door checks a request's model against). */
  get models(): ModelChooser {
    return this.opts.models;
  }

  get isDraining(): boolean {
    return this.draining;
  }

  /** A call this node carries, by id. */
  get(id: string): Call | undefined {
    return this.calls.get(id);
  }

  /**
   * Starts a call on the transport `open` makes for its id once it is admitted; resolves once the
   * transport accepted the client's request (with what that yields: an SDP answer) and the call is
   * recorded. Rejects with TransportRejected (a client error), CallLimitExceeded (the caller's own
   * limits), CallCapacityExceeded (the node's, or a drain), or a store error. Doors call it through
   * openCall (door.ts).
   */
  async create<Accepted>(
    req: CallRequest,
    open: (callId: string) => PendingTransport<Accepted> | Promise<PendingTransport<Accepted>>,
    admit: AdmitOptions = {},
  ): Promise<{ accepted: Accepted; call: Call }> {
    const { metrics, log } = this.opts;
    if (this.draining) throw new CallCapacityExceeded(DRAINING, 'draining');
    const ticket = await this.opts.admission.admitAcrossNodes(req, admit);
    const stopTimer = metrics.answerSeconds.startTimer();
    try {
      const id = randomId('conv_');
      const threadId = req.resume?.threadId ?? id;
      const history = req.resume?.history ?? [];
      // Asked while the transport is set up; a store that cannot say means no recording, not no call.
      const recorded = this.opts.recordings.wanted(req.apiKeyId).catch((err: Error) => {
        log.error({ err, conversation: id }, 'whether to record the call is unknown: not recorded');
        return false;
      });
      const pending = await open(id);
      if (pending.transport.offers.clientChannel && req.protocol === undefined) {
        void pending.transport.close('no_protocol');
        throw new Error(`a ${pending.transport.kind} call needs the event protocol its client speaks`);
      }
      // The call's span, from here; the API key's id names it, never the key.
      const trace = startCallTrace(this.opts.traceRoot, {
        'parley.conversation.id': id,
        'parley.call.door': pending.transport.kind,
        'parley.call.protocol': req.protocol ?? 'none',
        'parley.call.model': req.session.model,
        'parley.api_key.id': req.apiKeyId,
      });
      const call = new Call({
        id,
        apiKeyId: req.apiKeyId,
        transport: pending.transport,
        session: req.session,
        conversation: conversationOf(history),
        models: this.opts.models,
        ...(req.protocol ? { protocol: this.opts.protocols[req.protocol] } : {}),
        timeouts: req.connectTimeoutMs === undefined ? this.opts.timeouts : { ...this.opts.timeouts, connectTimeoutMs: req.connectTimeoutMs },
        rates: this.opts.rates,
        log,
        trace,
      });
      call.observe(new CallRecord(this.opts.conversations, id, threadId, history.length, log));
      call.observe(callMetrics(metrics));
      call.observe(callLog(log));
      call.observe(callTracing(trace, req.session.model));
      for (const make of this.opts.observers ?? []) call.observe(make());
      // Half-open until connected; its place is given back when it ends (or fails to start, below).
      call.observe({ connected: () => ticket.connected(), ended: () => ticket.release() });
      metrics.callSessions.track(call);
      let accepted: Accepted;
      try {
        accepted = await pending.accept();
      } catch (err) {
        void call.end('offer_rejected', 'failed');
        throw err;
      }
      try {
        await this.opts.conversations.create({ id, apiKeyId: req.apiKeyId, threadId, endUser: req.endUser, params: withoutSecrets(req.session), nodeId: this.opts.nodeId, transport: call.transportKind, recorded: await recorded });
      } catch (err) {
        // No record, no call (the client gets 503 and retries).
        void call.end('not_recorded', 'failed');
        throw err;
      }
      if (this.draining) {
        void call.end('server_shutdown', 'failed');
        throw new CallCapacityExceeded(DRAINING, 'draining');
      }
      // The client has not had the answer yet: the call cannot have connected before this.
      if (await recorded) this.record(call);
      this.calls.set(id, call);
      metrics.activeCalls.set(this.calls.size);
      stopTimer();
      call.observe({
        ended: (c) => {
          this.calls.delete(c.id);
          metrics.activeCalls.set(this.calls.size);
        },
      });
      log.info({ conversation: id, transport: call.transportKind, ...trace.logFields }, 'call created');
      return { accepted, call };
    } catch (err) {
      ticket.release();
      throw err;
    }
  }

  /** Records `call`; a recorder that cannot start is logged, and the call goes on unrecorded. */
  private record(call: Call): void {
    const { conversations, log } = this.opts;
    try {
      call.observe(recordingObserver(this.opts.recordings.recorder(call.id, (reason) => call.recordingStopped(reason)), conversations, log));
    } catch (err) {
      log.error({ err, conversation: call.id }, 'recording not started; the call goes on');
      conversations.setRecording(call.id, 'failed').catch((e: Error) => log.error({ err: e, conversation: call.id }, 'recording state not recorded'));
    }
  }

  /**
   * Attaches a sideband connection to live call `id` of key `apiKeyId`, speaking OpenAI's protocol
   * whatever the call's own client speaks; false when this node carries no such call.
   */
  attachControl(id: string, apiKeyId: string, channel: MessageChannel): boolean {
    const call = this.calls.get(id);
    if (!call || call.apiKeyId !== apiKeyId) return false;
    call.attachControl(channel, this.opts.protocols.openai);
    return true;
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

const DRAINING = 'The server is shutting down; try another node.';

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
