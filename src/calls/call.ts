// One live call, composed of its parts: its transport (the wire: WebRTC, …), its lifecycle
// (lifecycle.ts), the agent (agentHost.ts) and the client's event protocol (protocol/). This class
// wires them and implements the commands a protocol may give (CallControl); what else must happen
// when the call moves on (its record, metrics, logs) listens as a CallObserver.
import type { FastifyBaseLogger } from 'fastify';
import type { ConversationTurn, ModelChooser, Refusal, ResponseRequest } from '../agent/types.js';
import { Conversation, itemText, type Item, type PlaceResult } from '../session/conversation.js';
import type { CallEvent, RecordingStopReason } from '../session/events.js';
import type { Session } from '../session/session.js';
import { SAMPLE_RATE } from '../media/audio/format.js';
import type { StillImage } from '../media/stillImage.js';
import { StreamResampler } from '../media/audio/resample.js';
import { WIRE_RATE, decodeWireAudio } from '../media/audio/wireAudio.js';
import type { VideoFrameInfo } from '../media/videoReceiver.js';
import { NO_CALL_TRACE, type CallTrace } from '../observability/callTrace.js';
import { AgentHost } from './agentHost.js';
import { CallMeter, type CallFigures } from './callFigures.js';
import { CallLifecycle, type CallState, type CallTimeouts } from './lifecycle.js';
import { TokenBucket } from '../system/tokenBucket.js';
import type { CallControl, ClientProtocol, ProtocolFactory } from './protocol/types.js';
import { Sidebands } from './sideband.js';
import { eventAudioOf, type CallTransport, type EventAudio, type MessageChannel, type WireOutcome } from './transport.js';

/** Events held while the client's channel is not open yet (on a wire that has one). */
const PENDING_EVENTS_LIMIT = 200;

/** What one call's client may ask of the node, so that no caller starves the others. */
export interface CallRates {
  /** Client events a second (bursts of two seconds' worth); beyond it events are dropped. */
  messagesPerSecond: number;
  /** Replies the client may ask for a second (bursts of twice that, at least 3); beyond it they are refused. */
  repliesPerSecond: number;
  /** Sideband connections the call may have at once; one more is refused (sideband.ts). */
  sidebands: number;
}

/** What listens to a call: each method is optional; `ended` may return a promise the call's end waits for. */
export interface CallObserver {
  /** The transport connected for the first time: the call is active. */
  connected?(call: Call): void;
  sessionChanged?(call: Call, session: Session): void;
  /** A user or assistant turn completed. */
  turn?(call: Call, turn: ConversationTurn): void;
  /** 20 ms of the caller's audio as it arrived, mono PCM at `rate` (the rate the agent hears at). */
  callerAudio?(call: Call, frame: Int16Array, rate: number): void;
  /** A frame of the caller's camera, as received (whether or not the session asks for video). */
  videoFrame?(call: Call, frame: VideoFrameInfo): void;
  /** The agent's audio (48 kHz mono) as it leaves for the caller. */
  agentAudio?(call: Call, pcm: Int16Array): void;
  /** Every event of the call, as its protocol receives it. */
  event?(call: Call, event: CallEvent): void;
  /** The call ended (call.state and call.endReason say how), its transport closed. */
  ended?(call: Call): void | Promise<void>;
}

export interface CallOptions {
  id: string;
  /** The API key the call was opened under (its owner). */
  apiKeyId: string;
  transport: CallTransport;
  session: Session;
  /** The conversation so far (a resumed thread's turns, or empty). */
  conversation: Conversation;
  /** The catalogue's models: which agent runs the session's model, and its fallbacks. */
  models: ModelChooser;
  /** The event protocol the client speaks, chosen from its request; none on a wire with no client channel. */
  protocol?: ProtocolFactory;
  timeouts: CallTimeouts;
  rates: CallRates;
  log: FastifyBaseLogger;
  /** The call's span (traces); none: not traced. */
  trace?: CallTrace;
}

export class Call implements CallControl {
  readonly id: string;
  readonly apiKeyId: string;
  readonly conversation: Conversation;
  /** Its trace: the call's span, its turns' (a no-op when not traced). */
  readonly trace: CallTrace;
  private current: Session;
  private readonly transport: CallTransport;
  /** The transport's audio inside events, when its wire has no media track. */
  private readonly eventAudio: EventAudio | undefined;
  private readonly lifecycle: CallLifecycle;
  private readonly host: AgentHost;
  /** Speaks to the client's channel; undefined on a wire that has none. */
  private readonly protocol: ClientProtocol | undefined;
  private channel: MessageChannel | undefined;
  private pending: CallEvent[] = [];
  private finished: Promise<void> | undefined;
  private readonly observers: CallObserver[] = [];
  /** The app's servers beside the client, on the same call (sideband.ts). */
  private readonly sidebands: Sidebands;
  private readonly messageRate: TokenBucket;
  private readonly replyRate: TokenBucket;
  /** When the client was last told it is over its event rate (once a second at most). */
  private toldOverRateAt = -Infinity;
  private readonly meter = new CallMeter();
  /** The figures as they stood when the call ended (its transport closed). */
  private finalFigures: CallFigures | undefined;
  /** When the call was created (wall clock). */
  readonly startedAt = new Date();
  private firstConnectedAt: Date | undefined;
  /** The rate the transport delivers the caller's audio at (48 kHz until the agent asks for its own). */
  private inputRate = SAMPLE_RATE;

  constructor(private readonly opts: CallOptions) {
    this.id = opts.id;
    this.apiKeyId = opts.apiKeyId;
    this.trace = opts.trace ?? NO_CALL_TRACE;
    this.transport = opts.transport;
    this.eventAudio = eventAudioOf(opts.transport);
    this.current = opts.session;
    this.conversation = opts.conversation;
    const { messagesPerSecond, repliesPerSecond, sidebands } = opts.rates;
    this.messageRate = new TokenBucket(messagesPerSecond, 2 * messagesPerSecond);
    this.replyRate = new TokenBucket(repliesPerSecond, Math.max(3, 2 * repliesPerSecond));
    this.sidebands = new Sidebands(this, { messagesPerSecond, connections: sidebands });
    this.lifecycle = new CallLifecycle(opts.timeouts, (state, reason) => void this.close(state, reason));
    this.protocol = opts.protocol?.(this, (message) => this.channel?.send(JSON.stringify(message)));
    this.host = new AgentHost(
      {
        conversationId: this.id,
        apiKeyId: this.apiKeyId,
        session: () => this.current,
        audio: this.meter.metered(this.transport.audioOut),
        conversation: this.conversation,
        emit: (event) => this.emit(event),
        turnCompleted: (turn) => this.notify((o) => o.turn?.(this, turn)),
        requestKeyframe: () => this.transport.requestKeyframe?.() ?? false,
        trace: this.trace,
      },
      opts.models,
      // The caller's audio comes at the rate the agent hears at, converted by the transport.
      (agent) => {
        this.inputRate = agent.inputSampleRate;
        this.transport.setInputRate(agent.inputSampleRate);
      },
      (reason) => void this.end(reason, 'failed'),
    );
    this.transport.attach({
      connected: () => this.onConnected(),
      interrupted: () => this.lifecycle.interrupted(),
      lost: (reason) => this.lifecycle.lost(reason),
      audio: (frame, capturedAt) => {
        this.meter.callerFrame();
        this.host.agent.onAudio(frame, capturedAt);
        this.notify((o) => o.callerAudio?.(this, frame, this.inputRate));
      },
      agentAudio: (pcm) => this.notify((o) => o.agentAudio?.(this, pcm)),
      dtmf: (digit) => {
        this.lifecycle.activity();
        this.emit({ type: 'input.dtmf', digit });
      },
      video: (frame) => {
        this.meter.videoFrame();
        this.notify((o) => o.videoFrame?.(this, frame));
        if (this.current.modalities.includes('video')) this.host.agent.onVideoFrame?.(frame);
      },
      activity: () => this.lifecycle.activity(),
      channel: (channel) => this.onChannel(channel),
      failure: (err) => this.mediaFailed(err),
    });
    this.eventAudio?.onOutput((audio) => this.emit({ type: 'output_audio.delta', audio }));
    this.eventAudio?.sessionChanged(this.current);
  }

  get state(): CallState {
    return this.lifecycle.state;
  }

  get endReason(): string | undefined {
    return this.lifecycle.endReason;
  }

  /** When its transport first connected (undefined until then). */
  get connectedAt(): Date | undefined {
    return this.firstConnectedAt;
  }

  /** What its wire said of it, when it says anything (an outbound phone call's final INVITE status). */
  get wireOutcome(): WireOutcome | undefined {
    return this.transport.outcome;
  }

  /** The catalogue model running the call now (a fallback's, after its model failed). */
  get model(): string {
    return this.host.model;
  }

  /** Which wire carries the call (`webrtc`…). */
  get transportKind(): string {
    return this.transport.kind;
  }

  /** Its usage and quality so far; once it ended, as they stood at its end. */
  figures(): CallFigures {
    return this.finalFigures ?? this.measure();
  }

  private measure(): CallFigures {
    return this.meter.figures(this.transport.kind, this.transport.quality(), this.transport.audioOut.queuedMs);
  }

  observe(observer: CallObserver): void {
    this.observers.push(observer);
  }

  /**
   * A sideband connection (an app's server beside the client that holds the media): it hears every
   * event of the call and may give the commands its protocol knows, within the same rates.
   */
  attachControl(channel: MessageChannel, protocolFor: ProtocolFactory): void {
    if (this.lifecycle.ended) return channel.close();
    this.sidebands.attach(channel, protocolFor);
  }

  // CallControl

  session(): Session {
    return this.current;
  }

  updateSession(next: Session): Refusal {
    if (next.model !== this.current.model && !this.opts.models.allows(next.model, this.apiKeyId)) {
      return { ok: false, code: 'model_not_allowed', message: `This API key may not use the model ${next.model}; GET /v1/realtime/models lists the models it may use.` };
    }
    this.current = next;
    this.eventAudio?.sessionChanged(next);
    this.host.sessionChanged();
    this.notify((o) => o.sessionChanged?.(this, next));
    return { ok: true };
  }

  decodeImage(bytes: Buffer): Promise<StillImage> {
    const agent = this.host.agent;
    if (!agent.decodeImage) return Promise.reject(new Error(`The model ${this.current.model} takes no images.`));
    return agent.decodeImage(bytes);
  }

  addItem(item: Item, after?: string | null, audio?: string): PlaceResult {
    const placed = this.conversation.add(item, after);
    if (!placed.ok) return placed;
    this.emit({ type: 'item.added', item, previousItemId: placed.previousItemId });
    this.emit({ type: 'item.done', item, previousItemId: placed.previousItemId });
    this.host.agent.itemAdded?.(item, placed.previousItemId);
    if (audio && this.host.agent.transcribeItem) {
      // The item's audio in the session's input format, at the rate the agent hears.
      const encoding = this.current.inputAudio ?? 'pcm16';
      const pcm = new StreamResampler(WIRE_RATE[encoding], this.inputRate).push(decodeWireAudio(Buffer.from(audio, 'base64'), encoding));
      this.host.agent.transcribeItem(item.id, pcm);
    }
    if (item.type === 'message' && (item.role === 'user' || item.role === 'assistant')) {
      const text = itemText(item);
      const turn = { role: item.role, text };
      if (text) this.notify((o) => o.turn?.(this, turn));
    }
    return placed;
  }

  deleteItem(id: string): boolean {
    if (!this.conversation.delete(id)) return false;
    this.emit({ type: 'item.deleted', itemId: id });
    this.host.agent.itemDeleted?.(id);
    return true;
  }

  truncateItem(id: string, audioEndMs: number): { ok: true } | { ok: false; message: string } {
    const cut = this.conversation.truncate(id, audioEndMs);
    if (!cut.ok) return cut;
    this.emit({ type: 'item.truncated', itemId: id, contentIndex: 0, audioEndMs });
    this.host.agent.itemTruncated?.(id, audioEndMs);
    return { ok: true };
  }

  createResponse(request?: ResponseRequest): Refusal {
    // Every reply costs synthesis and model time: a client asking for them in a burst is refused.
    if (!this.replyRate.take()) {
      return { ok: false, code: 'rate_limit_exceeded', message: `At most ${this.opts.rates.repliesPerSecond} replies a second may be asked for; this one was not started.` };
    }
    return this.host.agent.createResponse(request);
  }

  cancelResponse(): boolean {
    return this.host.agent.cancelResponse();
  }

  rateLimits(): { name: string; limit: number; remaining: number; reset_seconds: number }[] {
    const replies = this.replyRate.state();
    return [{ name: 'requests', limit: replies.limit, remaining: replies.remaining, reset_seconds: replies.resetSeconds }];
  }

  clearOutputAudio(): void {
    this.host.agent.clearOutputAudio();
  }

  get audioInEvents(): boolean {
    return !this.transport.offers.mediaTrack;
  }

  appendInputAudio(audio: string): boolean {
    if (!this.eventAudio) return false;
    this.eventAudio.append(audio);
    return true;
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
    this.opts.log.error({ err, conversation: this.id, ...this.trace.logFields }, 'client message handling failed');
  }

  /** The call's recording stopped early (callRecording.ts): its client and sideband are told; the call goes on. */
  recordingStopped(reason: RecordingStopReason): void {
    if (!this.lifecycle.ended) this.emit({ type: 'recording.stopped', reason });
  }

  // Wiring

  private onConnected(): void {
    if (this.lifecycle.resumed()) return;
    if (!this.lifecycle.connected()) return;
    this.firstConnectedAt = new Date();
    this.meter.connected();
    this.notify((o) => o.connected?.(this));
  }

  /** The transport's event channel: the protocol greets on it and hears the client through it. */
  private onChannel(channel: MessageChannel): void {
    const protocol = this.protocol;
    // The call manager gives every wire with a client channel its protocol.
    if (!protocol) return channel.close();
    this.channel = channel;
    channel.onMessage((text) => {
      if (this.channel !== channel) return;
      this.lifecycle.activity();
      if (this.messageRate.take()) protocol.receive(text);
      else this.overMessageRate();
    });
    protocol.opened();
    for (const event of this.pending.splice(0)) protocol.deliver(event);
    // A channel that opens in the moment between the call's end and its transport's close is told too.
    if (this.lifecycle.ended) protocol.ended(this.lifecycle.endReason!);
  }

  /** An event over the client's rate is dropped unread; the client hears so, once a second at most. */
  private overMessageRate(): void {
    const now = performance.now();
    if (now - this.toldOverRateAt < 1000) return;
    this.toldOverRateAt = now;
    const limit = this.opts.rates.messagesPerSecond;
    this.emit({ type: 'error', kind: 'invalid_request_error', code: 'rate_limit_exceeded', message: `More than ${limit} client events a second: events are being dropped unread; slow down.` });
  }

  /** The media path threw: said to the client, logged, and the call ends (its audio cannot be trusted). */
  private mediaFailed(err: Error): void {
    if (this.lifecycle.ended) return;
    this.emit({ type: 'stage.failed', stage: 'media', code: 'media_failed', message: "The call's media failed on the server; the call ends.", recoverable: false, cause: err });
    this.lifecycle.end('failed', 'media_failed');
  }

  private emit(event: CallEvent): void {
    this.meter.event(event);
    this.notify((o) => o.event?.(this, event));
    this.sidebands.deliver(event);
    if (!this.sidebands.forClient(event)) return;
    if (this.channel) this.protocol?.deliver(event);
    // A wire with no client channel (a phone) will never read them.
    else if (this.transport.offers.clientChannel && this.pending.length < PENDING_EVENTS_LIMIT) this.pending.push(event);
  }

  /** Tells every observer; one that throws is logged and does not stop the others nor the call. */
  private notify(tell: (o: CallObserver) => void): void {
    for (const o of this.observers) {
      try {
        tell(o);
      } catch (err) {
        this.opts.log.error({ err, conversation: this.id, ...this.trace.logFields }, 'call observer failed');
      }
    }
  }

  /** The end, once: tell the client, stop the agent, close the transport, then the observers. */
  private close(state: 'ended' | 'failed', reason: string): Promise<void> {
    this.host.close();
    if (this.channel) this.protocol?.ended(reason);
    this.sidebands.ended(reason);
    this.finished = (async () => {
      await this.transport.close(reason);
      this.finalFigures = this.measure();
      const waits: Promise<void>[] = [];
      this.notify((o) => {
        const done = o.ended?.(this);
        if (done) waits.push(done.catch((err: Error) => this.opts.log.error({ err, conversation: this.id, ...this.trace.logFields }, 'call observer failed')));
      });
      await Promise.all(waits);
    })();
    return this.finished;
  }
}
