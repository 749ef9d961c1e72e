// The agent of a call whose model is an upstream realtime model: the caller's audio goes up as it
// arrives; the upstream's reply is played through the call's own audio out (its pacing, recordings and
// figures as any reply's); the upstream's events reach the client as the call's events, whatever its
// door. Parley keeps what only it knows: what the caller heard when they spoke over a reply (its
// playout, not the upstream's guess), the camera's picture at the end of a turn, the conversation's
// record, the bounds an upstream must keep, and, when the upstream fails, one failure the call hands
// to the model's fallback.
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config/env.js';
import type { RealtimeEntry } from '../../config/models.js';
import { SAMPLE_RATE } from '../../media/audio/format.js';
import { StreamResampler } from '../../media/audio/resample.js';
import type { StillDecoder, StillImage } from '../../media/stillImage.js';
import type { VideoFrameInfo } from '../../media/videoReceiver.js';
import type { Metrics } from '../../observability/metrics.js';
import { hasCameraPicture, itemText, newItemId, type Item, type MessageItem } from '../../session/conversation.js';
import type { CallEvent, StageTimings } from '../../session/events.js';
import type { Session } from '../../session/session.js';
import type { Agent, AgentContext, AgentFactory, Refusal, ResponseRequest } from '../types.js';
import { Camera } from '../vision/camera.js';
import { HeardAudio } from './heard.js';
import { OpenAiUpstream } from './openaiUpstream.js';
import type { CommandOrigin, UpstreamEvent, UpstreamFailure, UpstreamModel, UpstreamSessionOptions } from './types.js';

export interface RealtimeBridgeDeps {
  /** Time the upstream has to accept the connection and confirm the session. */
  connectTimeoutMs: number;
  /** Time the upstream has to start a reply it was asked for. */
  responseTimeoutMs: number;
  /** The node's picture decoder (the camera's key frames, clients' images); none: no pictures. */
  stills?: StillDecoder;
  /** How long a turn's end waits for the key frame it asked for. */
  keyframeWaitMs?: number;
  metrics?: Metrics;
  log?: FastifyBaseLogger;
  /** A reply's stage timings, once its first audio is out (metrics). */
  onTimings?(model: string, timings: StageTimings): void;
  /** A camera picture was decoded in `ms`, or put in the conversation (metrics). */
  onPicture?(event: { decodedMs: number } | { sent: true }): void;
}

/** Audio an upstream may have queued for the caller (it sends faster than real time); past it, it is flooding. */
export const MAX_QUEUED_AUDIO_MS = 60_000;
/** What Parley may have sent that the upstream has not read (about 15 s of the caller's audio); past it, it stopped reading. */
const MAX_UNREAD_BYTES = 1024 * 1024;
/** The conversation so far that a new upstream session is given (the latest items). */
const MAX_HISTORY_ITEMS = 100;
/** The camera's pictures a conversation keeps (the latest; each tens of kB). */
const MAX_CAMERA_PICTURES = 8;
/** Replies remembered as cut (their late audio is dropped). */
const MAX_CUT = 64;
/** An upstream's words in an error are bounded. */
const MAX_UPSTREAM_MESSAGE = 300;

export class RealtimeBridge implements Agent {
  readonly inputSampleRate: number;
  private session: Session;
  private readonly heard = new HeardAudio();
  private readonly camera: Camera | undefined;
  /** The caller's camera has sent frames on this call. */
  private cameraSeen = false;
  private ready = false;
  /** Failed or closed: nothing more is done or said. */
  private ended = false;
  private connectTimer: NodeJS.Timeout | undefined;
  private responseTimer: NodeJS.Timeout | undefined;
  private readonly openedAt = performance.now();
  /** The reply the upstream is making (response.created → response.done). */
  private active: string | undefined;
  /** A reply was asked for and has not started. */
  private requested = false;
  /** Replies cut short here (barge-in, cancel): what more of their audio arrives is not played. */
  private readonly cut = new Set<string>();
  /** The reply the caller is hearing, and whether the upstream has finished it. */
  private playing: { responseId: string; done: boolean } | undefined;
  /** Per reply in progress: when it started, its first output, and whether its audio has started. */
  private readonly replies = new Map<string, { createdAt: number; firstOutputAt?: number; spoke: boolean; afterSpeechAt?: number }>();
  /** Finished replies whose turns are not recorded yet (they are once their audio has played). */
  private readonly unrecorded = new Map<string, string[]>();
  /** When the upstream last said the caller stopped speaking (for voice-to-voice). */
  private speechStoppedAt: number | undefined;
  /** Upsamplers of the replies' audio, by item (each item's audio is one stream). */
  private readonly upsamplers = new Map<string, StreamResampler>();
  /** Characters of an item's transcript already placed on its audio (the rest goes with the next piece). */
  private readonly placed = new Map<string, number>();
  /** The camera's picture of each turn, by the turn's user item. */
  private readonly pictures = new Map<string, Promise<StillImage | undefined>>();
  /** Turns the caller started (a picture meant for an earlier one is not sent with a later one's reply). */
  private turns = 0;
  /** The client's items, sent up a moment later with the audio that may come with them (transcribeItem). */
  private readonly clientItems = new Map<string, { item: Item; previousItemId: string | null; audio?: Int16Array }>();
  private readonly unsubscribePlayback: () => void;
  private readonly log: FastifyBaseLogger | undefined;

  constructor(
    private readonly ctx: AgentContext,
    private readonly entry: RealtimeEntry,
    private readonly upstream: UpstreamModel,
    private readonly deps: RealtimeBridgeDeps,
  ) {
    this.inputSampleRate = upstream.inputSampleRate;
    this.session = ctx.session();
    this.log = deps.log?.child({ model: entry.id, conversation: ctx.conversationId });
    const requestKeyframe = ctx.requestKeyframe?.bind(ctx);
    this.camera =
      deps.stills && requestKeyframe
        ? new Camera({
            decoder: deps.stills,
            requestKeyframe,
            keyframeWaitMs: deps.keyframeWaitMs ?? 400,
            decoded: (ms) => deps.onPicture?.({ decodedMs: ms }),
            failed: (code, message, cause) => this.emit({ type: 'stage.failed', stage: 'vision', code, message, recoverable: true, ...(cause ? { cause } : {}) }),
          })
        : undefined;
    this.unsubscribePlayback = ctx.audio.onPlayback({
      playbackFinished: ({ interrupted }) => {
        if (!interrupted) this.checkPlaybackEnded();
      },
    });
    this.connectTimer = setTimeout(
      () => this.fail({ code: 'model_timeout', message: `The model ${entry.id} did not confirm its session within ${deps.connectTimeoutMs} ms.` }),
      deps.connectTimeoutMs,
    );
    upstream.open(this.session, this.options(), { event: (e) => this.onUpstream(e), failed: (f) => this.fail(f) });
    // The conversation so far (a resumed thread, a model that failed before this one) goes up as text.
    for (const item of ctx.conversation.items.slice(-MAX_HISTORY_ITEMS)) upstream.addItem(item, undefined, 'bridge');
  }

  // Agent

  onAudio(frame: Int16Array): void {
    if (this.ended) return;
    if (this.upstream.bufferedBytes > MAX_UNREAD_BYTES) {
      return this.fail({ code: 'model_failed', message: `The model ${this.entry.id} stopped reading the caller's audio.` });
    }
    this.upstream.appendAudio(frame);
  }

  decodeImage(bytes: Buffer): Promise<StillImage> {
    if (!this.deps.stills) return Promise.reject(new Error('This server decodes no images.'));
    return this.deps.stills.decode({ kind: 'image', bytes });
  }

  onVideoFrame(frame: VideoFrameInfo): void {
    if (!this.camera || this.ended) return;
    this.camera.onFrame(frame);
    if (this.cameraSeen) return;
    // From the camera's first frame the bridge asks for the replies, each after its turn's picture.
    this.cameraSeen = true;
    this.upstream.configure(this.session, this.options());
  }

  onSessionUpdate(session: Session): void {
    this.session = session;
    if (!this.ended) this.upstream.configure(session, this.options());
  }

  createResponse(request: ResponseRequest = {}): Refusal {
    if (this.session.kind === 'transcription') {
      return { ok: false, code: 'invalid_value', message: 'A transcription session transcribes the caller and makes no responses.' };
    }
    if (this.active || this.requested) {
      const which = this.active ? `Response ${this.active}` : 'A response';
      return { ok: false, code: 'conversation_already_has_active_response', message: `${which} is in progress; cancel it or wait for response.done.` };
    }
    this.requestResponse(request, 'client');
    return { ok: true };
  }

  cancelResponse(): boolean {
    if (!this.active && !this.requested) return false;
    this.upstream.cancelResponse();
    if (this.active) this.markCut(this.active);
    if (this.playing) this.stopPlayout();
    return true;
  }

  clearOutputAudio(): void {
    const wasPlaying = this.playing?.responseId;
    if (this.active) {
      this.upstream.cancelResponse();
      this.markCut(this.active);
    }
    this.stopPlayout();
    // The client is told its request was done even when nothing was playing.
    if (!wasPlaying) this.emit({ type: 'output_audio.cleared', responseId: this.active ?? null });
  }

  commitInput(): Refusal {
    this.upstream.commitInput();
    return { ok: true };
  }

  clearInput(): void {
    this.upstream.clearInput();
  }

  transcribeItem(itemId: string, pcm: Int16Array): void {
    const waiting = this.clientItems.get(itemId);
    if (waiting) waiting.audio = pcm;
  }

  itemAdded(item: Item, previousItemId: string | null): void {
    // The audio of a client's user item comes just after (transcribeItem): the item waits for it.
    this.clientItems.set(item.id, { item, previousItemId });
    queueMicrotask(() => this.sendClientItems());
  }

  itemDeleted(itemId: string): void {
    if (this.clientItems.delete(itemId)) return;
    this.upstream.deleteItem(itemId);
  }

  itemTruncated(itemId: string, audioEndMs: number): void {
    this.upstream.truncate(itemId, audioEndMs);
  }

  close(): void {
    this.end();
  }

  // The upstream

  private onUpstream(e: UpstreamEvent): void {
    if (this.ended) return;
    switch (e.type) {
      case 'upstream.ready':
        this.ready = true;
        clearTimeout(this.connectTimer);
        this.deps.metrics?.modelConnectSeconds.observe({ model: this.entry.id }, (performance.now() - this.openedAt) / 1000);
        return;
      case 'upstream.audio':
        return this.play(e.responseId, e.itemId, e.pcm, e.rate);
      case 'upstream.error':
        return this.upstreamError(e);
      case 'input.speech_started':
        this.turns++;
        this.camera?.turnDone();
        // Barge-in: the caller's voice stops the reply at once, cut where they stopped hearing it.
        if (this.session.turnDetection.interruptResponse) this.interrupt();
        return this.emit(e);
      case 'input.speech_stopped':
        this.speechStoppedAt = performance.now();
        return this.emit(e);
      case 'input.committed':
        this.emit(e);
        if (this.options().ownResponses) void this.answerWithPicture(e.itemId);
        return;
      case 'transcription.delta':
      case 'transcription.failed':
        if (this.session.transcribeInput) this.emit(e);
        return;
      case 'transcription.completed':
        if (this.session.transcribeInput) this.emit(e);
        void this.recordUserTurn(e.itemId, e.transcript);
        return;
      case 'item.added': {
        const after = e.previousItemId !== null && this.ctx.conversation.get(e.previousItemId) ? e.previousItemId : undefined;
        const placed = this.ctx.conversation.add(e.item, after);
        if (placed.ok) this.emit({ type: 'item.added', item: e.item, previousItemId: placed.previousItemId });
        return;
      }
      case 'item.done':
        if (this.ctx.conversation.get(e.item.id)) this.emit({ ...e, previousItemId: this.ctx.conversation.previousOf(e.item.id) });
        return;
      case 'item.deleted':
        if (this.ctx.conversation.delete(e.itemId)) this.emit(e);
        return;
      case 'response.created':
        this.requested = false;
        clearTimeout(this.responseTimer);
        this.active = e.response.id;
        this.replies.set(e.response.id, { createdAt: performance.now(), spoke: false, ...(this.speechStoppedAt !== undefined ? { afterSpeechAt: this.speechStoppedAt } : {}) });
        this.speechStoppedAt = undefined;
        if (this.replies.size > MAX_CUT) this.replies.delete(this.replies.keys().next().value!);
        return this.emit(e);
      case 'response.text.delta':
      case 'response.function_call_arguments.delta': {
        const reply = this.replies.get(e.responseId);
        if (reply) reply.firstOutputAt ??= performance.now();
        return this.emit(e);
      }
      case 'response.done':
        return this.responseDone(e.response);
      default:
        return this.emit(e);
    }
  }

  private upstreamError(e: Extract<UpstreamEvent, { type: 'upstream.error' }>): void {
    const message = this.scrub(e.message);
    // Before the session is confirmed, the only command sent is the session itself.
    if (!this.ready) return this.fail({ code: 'model_unavailable', message: `The model ${this.entry.id} refused the session Parley asked for${message ? `: ${message}` : '.'}` });
    if (e.command === 'response.create') {
      this.requested = false;
      clearTimeout(this.responseTimer);
    }
    if (e.origin === 'client') this.emit({ type: 'error', kind: 'invalid_request_error', code: e.code, message: message || `The model ${this.entry.id} refused the request.` });
    else this.log?.warn({ code: e.code, command: e.command, upstreamMessage: message }, 'upstream model refused a command of the bridge');
  }

  private responseDone(response: Extract<CallEvent, { type: 'response.done' }>['response']): void {
    const id = response.id;
    if (this.active === id) this.active = undefined;
    this.replies.delete(id);
    if (response.usage && this.deps.metrics) {
      this.deps.metrics.modelTokens.inc({ model: this.entry.id, kind: 'input' }, response.usage.inputTokens);
      this.deps.metrics.modelTokens.inc({ model: this.entry.id, kind: 'output' }, response.usage.outputTokens);
    }
    this.emit({ type: 'response.done', response });
    if (response.inConversation) {
      const messages = response.output.filter((i) => i.type === 'message').map((i) => i.id);
      if (messages.length) this.unrecorded.set(id, messages);
    }
    if (this.playing?.responseId === id) {
      this.playing.done = true;
      this.checkPlaybackEnded();
    } else this.recordReply(id);
  }

  /** A piece of a reply's audio, played through the call's audio out. */
  private play(responseId: string, itemId: string, pcm: Int16Array, rate: number): void {
    if (this.cut.has(responseId)) return;
    let upsampler = this.upsamplers.get(itemId);
    if (!upsampler) {
      upsampler = new StreamResampler(rate, SAMPLE_RATE);
      this.upsamplers.set(itemId, upsampler);
      if (this.upsamplers.size > 4) this.upsamplers.delete(this.upsamplers.keys().next().value!);
    }
    const out = upsampler.push(pcm);
    const ms = (out.length * 1000) / SAMPLE_RATE;
    if (this.ctx.audio.queuedMs + ms > MAX_QUEUED_AUDIO_MS) {
      return this.fail({ code: 'model_failed', message: `The model ${this.entry.id} sent audio faster than it can be played (over ${MAX_QUEUED_AUDIO_MS / 1000} s ahead of the caller).` });
    }
    const reply = this.replies.get(responseId);
    if (reply && !reply.spoke) {
      reply.spoke = true;
      this.audioStarted(responseId, itemId, reply);
    }
    if (this.playing?.responseId !== responseId) {
      this.playing = { responseId, done: false };
      this.emit({ type: 'output_audio.started', responseId });
    }
    this.ctx.audio.write(out);
    this.heard.written(itemId, responseId, ms);
    // The words said so far go with this piece of audio (truncation keeps the words heard).
    const item = this.ctx.conversation.get(itemId);
    if (item?.type === 'message') {
      const part = item.content.find((c) => c.type === 'output_audio');
      const transcript = part?.type === 'output_audio' ? (part.transcript ?? '') : '';
      const from = this.placed.get(itemId) ?? 0;
      this.placed.set(itemId, transcript.length);
      if (this.placed.size > MAX_CUT) this.placed.delete(this.placed.keys().next().value!);
      this.ctx.conversation.addSpoken(itemId, ms, transcript.slice(from));
    }
  }

  /** A reply's first audio is going out: where the time went. */
  private audioStarted(responseId: string, itemId: string, reply: { createdAt: number; firstOutputAt?: number; afterSpeechAt?: number }): void {
    const now = performance.now();
    const timings: StageTimings = {
      first_token_ms: Math.round((reply.firstOutputAt ?? now) - reply.createdAt),
      ...(reply.afterSpeechAt !== undefined ? { voice_to_voice_ms: Math.round(now - reply.afterSpeechAt) } : {}),
    };
    this.emit({ type: 'response.audio.started', responseId, itemId, timings });
    this.deps.onTimings?.(this.entry.id, timings);
  }

  /** The caller spoke over the agent: what plays stops now, and the reply being made is cut. */
  private interrupt(): void {
    const responseId = this.playing?.responseId ?? this.active;
    if (!responseId) return;
    if (this.active) this.markCut(this.active);
    const dropped = this.stopPlayout();
    this.emit({ type: 'response.interrupted', responseId, droppedAudioMs: Math.round(dropped) });
  }

  /**
   * Drops the audio not yet heard; each item cut short is truncated where the caller stopped hearing
   * it, here and upstream. Returns the milliseconds dropped.
   */
  private stopPlayout(): number {
    const queued = this.ctx.audio.queuedMs;
    const dropped = this.ctx.audio.clear();
    for (const c of this.heard.cleared(queued)) {
      this.markCut(c.responseId);
      this.upstream.truncate(c.itemId, c.heardMs);
      const cut = this.ctx.conversation.truncate(c.itemId, c.heardMs);
      if (cut.ok) this.emit({ type: 'item.truncated', itemId: c.itemId, contentIndex: 0, audioEndMs: Math.round(c.heardMs) });
    }
    const playing = this.playing;
    this.playing = undefined;
    if (playing) {
      this.emit({ type: 'output_audio.cleared', responseId: playing.responseId });
      this.recordReply(playing.responseId);
    }
    return dropped;
  }

  private markCut(responseId: string): void {
    this.cut.add(responseId);
    if (this.cut.size > MAX_CUT) this.cut.delete(this.cut.values().next().value!);
  }

  /** The caller heard all that was written: a finished reply's playback has ended. */
  private checkPlaybackEnded(): void {
    const playing = this.playing;
    if (!playing?.done || this.ctx.audio.queuedMs > 0) return;
    this.playing = undefined;
    this.emit({ type: 'output_audio.stopped', responseId: playing.responseId });
    this.recordReply(playing.responseId);
  }

  /** The reply's messages, as the conversation holds them now (what was heard), become turns of the record. */
  private recordReply(responseId: string): void {
    const ids = this.unrecorded.get(responseId);
    if (!ids) return;
    this.unrecorded.delete(responseId);
    for (const id of ids) {
      const item = this.ctx.conversation.get(id);
      const text = item ? itemText(item) : '';
      if (text) this.ctx.turnCompleted({ role: 'assistant', text });
    }
  }

  private async recordUserTurn(itemId: string, transcript: string): Promise<void> {
    const text = transcript.trim();
    if (!text) return;
    const image = await (this.pictures.get(itemId) ?? Promise.resolve(undefined));
    if (this.ended || !this.ctx.conversation.get(itemId)) return;
    this.ctx.turnCompleted({ role: 'user', text, ...(image ? { image: `data:image/jpeg;base64,${image.thumbnail.toString('base64')}` } : {}) });
  }

  /**
   * The caller's turn ended (the bridge asks for the replies while the camera is on): the camera's
   * picture goes up as the turn's input_image, then the reply is asked for.
   */
  private async answerWithPicture(userItemId: string): Promise<void> {
    const turn = this.turns;
    const picture = this.camera?.active ? this.camera.capture() : Promise.resolve(undefined);
    this.pictures.set(userItemId, picture);
    if (this.pictures.size > MAX_CAMERA_PICTURES) this.pictures.delete(this.pictures.keys().next().value!);
    const image = await picture;
    // The caller went on speaking: that turn's end asks for the reply.
    if (this.ended || turn !== this.turns) return;
    if (image) {
      const item: MessageItem = { id: newItemId(), type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_image', image, detail: 'auto', source: 'camera' }] };
      const placed = this.ctx.conversation.add(item);
      const previousItemId = placed.ok ? placed.previousItemId : null;
      this.emit({ type: 'item.added', item, previousItemId });
      this.emit({ type: 'item.done', item, previousItemId });
      this.upstream.addItem(item, previousItemId, 'bridge');
      this.deps.onPicture?.({ sent: true });
      this.forgetOldPictures();
    }
    if (!this.active && !this.requested) this.requestResponse({}, 'bridge');
  }

  /** Only the latest camera pictures stay in the conversation (tens of kB each). */
  private forgetOldPictures(): void {
    const withPictures = this.ctx.conversation.items.filter(hasCameraPicture);
    for (const old of withPictures.slice(0, -MAX_CAMERA_PICTURES)) {
      if (old.type === 'message') old.content = old.content.filter((c) => !(c.type === 'input_image' && c.source === 'camera'));
    }
  }

  private requestResponse(request: ResponseRequest, origin: CommandOrigin): void {
    // The client's items go up before the reply that is to answer them.
    this.sendClientItems();
    this.requested = true;
    this.upstream.createResponse(request, origin);
    clearTimeout(this.responseTimer);
    this.responseTimer = setTimeout(
      () => this.fail({ code: 'model_timeout', message: `The model ${this.entry.id} did not start a reply within ${this.deps.responseTimeoutMs} ms.` }),
      this.deps.responseTimeoutMs,
    );
  }

  private sendClientItems(): void {
    if (this.ended) return;
    for (const { item, previousItemId, audio } of this.clientItems.values()) this.upstream.addItem(item, previousItemId, 'client', audio);
    this.clientItems.clear();
  }

  /** How the upstream is asked to run the session now. */
  private options(): UpstreamSessionOptions {
    const s = this.session;
    // The beta interface takes no pictures: its replies start on their own.
    const ownResponses = this.cameraSeen && this.entry.dialect === 'ga' && s.modalities.includes('video') && s.turnDetection.createResponse && s.kind !== 'transcription';
    return { ownResponses };
  }

  private emit(event: CallEvent): void {
    this.ctx.emit(event);
  }

  /** An upstream's words, bounded, without its key. */
  private scrub(text: string): string {
    let out = text.slice(0, MAX_UPSTREAM_MESSAGE);
    const key = this.entry.apiKey;
    if (key) out = out.split(key).join('[redacted]');
    return out;
  }

  /**
   * The upstream cannot go on: the reply it was making is closed as failed, and the call is told once
   * (it goes on with the model's fallback, or ends).
   */
  private fail(failure: UpstreamFailure): void {
    if (this.ended) return;
    const active = this.active;
    this.end();
    this.log?.warn({ code: failure.code }, failure.message);
    if (active) this.ctx.emit({ type: 'response.done', response: { id: active, status: 'failed', reason: failure.code, output: [], inConversation: true, metadata: null } });
    this.ctx.modelFailed(failure);
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.connectTimer);
    clearTimeout(this.responseTimer);
    this.unsubscribePlayback();
    this.camera?.close();
    this.clientItems.clear();
    this.upstream.close();
  }
}

export type RealtimeAgentDeps = RealtimeBridgeDeps & {
  /** Bounds on what the upstream sends. */
  maxPayloadBytes: number;
  maxEventsPerSecond: number;
};

/** The largest message an upstream may send (an item echoed with its picture is the largest). */
const MAX_UPSTREAM_MESSAGE_BYTES = 8 * 1024 * 1024;
/** Events a second an upstream may send on average (a reply's audio and text are tens a second). */
const MAX_UPSTREAM_EVENTS_PER_SECOND = 1000;

/** The node's realtime models' agents, from its settings (createAgents' `realtime`). */
export function realtimeAgents(config: Pick<Config, 'MODEL_CONNECT_TIMEOUT_MS' | 'MODEL_RESPONSE_TIMEOUT_MS' | 'VISION_KEYFRAME_WAIT_MS'>, log: FastifyBaseLogger, metrics?: Metrics) {
  return (entry: RealtimeEntry, node: Pick<RealtimeBridgeDeps, 'stills' | 'onTimings' | 'onPicture'>): AgentFactory =>
    realtimeAgentFactory(entry, {
      ...node,
      connectTimeoutMs: config.MODEL_CONNECT_TIMEOUT_MS,
      responseTimeoutMs: config.MODEL_RESPONSE_TIMEOUT_MS,
      keyframeWaitMs: config.VISION_KEYFRAME_WAIT_MS,
      log,
      ...(metrics ? { metrics } : {}),
      maxPayloadBytes: MAX_UPSTREAM_MESSAGE_BYTES,
      maxEventsPerSecond: MAX_UPSTREAM_EVENTS_PER_SECOND,
    });
}

/** The agents of a realtime model of the catalogue: one upstream session per call (OpenAI's Realtime protocol). */
export function realtimeAgentFactory(entry: RealtimeEntry, deps: RealtimeAgentDeps): AgentFactory {
  return {
    create: (ctx) => {
      const upstream = new OpenAiUpstream(entry, { maxPayloadBytes: deps.maxPayloadBytes, maxEventsPerSecond: deps.maxEventsPerSecond }, (id) => ctx.conversation.get(id));
      return new RealtimeBridge(ctx, entry, upstream, deps);
    },
  };
}
