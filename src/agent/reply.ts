// One reply of the agent, from the first token to the last sample: generation (text and tool calls),
// speech clause by clause, the items and events it produces, and cancellation as one — an
// interrupted reply keeps in the conversation what the caller heard of it. A reply can be prepared
// before it is wanted (`held`): it generates and synthesises, but nothing of it is seen — no event,
// no item, no audio — until it is released, in order, or discarded without a trace.
import type { TurnTrace } from '../observability/callTrace.js';
import { randomId } from '../system/ids.js';
import { itemText, newItemId, type FunctionCallItem, type Item, type McpApprovalRequestItem, type McpCallItem, type MessageItem } from '../session/conversation.js';
import type { ResponseInfo, ResponseStatus, StageTimings } from '../session/events.js';
import type { ToolChoice, ToolDefinition } from '../session/tools.js';
import { toChatMessages } from './llm/messages.js';
import type { ReplyModel } from './llm/types.js';
import type { McpHub } from './mcp/hub.js';
import type { VoiceStages } from './stages.js';
import type { SpokenChunk } from './tts/types.js';
import type { AgentContext } from './types.js';

/** What the reply is generated with: the session's settings, overridden by the client's request. */
export interface ReplySettings {
  instructions: string | null;
  temperature: number;
  tools: ToolDefinition[];
  toolChoice: ToolChoice;
  maxOutputTokens: number | null;
  voice: string;
  audio: boolean;
}

export interface ReplyOptions {
  ctx: AgentContext;
  model: ReplyModel;
  /** A speaker for this reply (stages.speaker). */
  speaker: VoiceStages['speaker'];
  settings: ReplySettings;
  /** false: an out-of-band reply, whose items stay out of the conversation. */
  inConversation: boolean;
  /** What to answer (default: the conversation). */
  input?: readonly Item[];
  metadata?: Record<string, unknown> | null;
  /** Stage timings measured before the reply (end of turn, transcription). */
  timings: StageTimings;
  /** performance.now() when the caller stopped speaking, for voice-to-voice. */
  voiceEndedAt?: number;
  /** The span of the caller's turn this reply answers (traces): its stages up to the first audio are the reply's. */
  turn?: TurnTrace;
  /** The reply's first audio is queued: the turn's span ends when its first packet leaves. */
  awaitFirstPacket?(turn: TurnTrace): void;
  /** Audio of the reply is being written: the agent tracks playback. */
  onAudio(): void;
  /** What the reply waits for before it reads the conversation (transcriptions under way). */
  after?: Promise<unknown>;
  /** Prepare only: nothing is emitted, added or played until release(). */
  held?: boolean;
  /** Reports stage timings once the first audio is out. */
  onTimings?(timings: StageTimings): void;
  /** The call's MCP servers: their tools are offered, and the model's calls of them made here. */
  mcp?: McpHub;
}

/** An MCP tool call the model is making (arguments as they stream). */
interface PendingMcpCall {
  name: string;
  arguments: string;
}

/** Rounds of generation a reply makes at most (each after MCP calls, to read their answers). */
const MAX_MCP_ROUNDS = 4;

const APOLOGY = "Sorry, I couldn't come up with an answer just now. Please try again.";

/** A rough token count for models that do not report usage (about four characters a token). */
const estimateTokens = (text: string) => Math.ceil(text.length / 4);

export class Reply {
  readonly id = randomId('resp_', 12);
  /** Resolves with the final response once it completed, failed or was cancelled. */
  readonly done: Promise<ResponseInfo>;
  private readonly abort = new AbortController();
  private status: ResponseStatus = 'in_progress';
  private reason: string | undefined;
  private readonly output: Item[] = [];
  private message: MessageItem | undefined;
  private text = '';
  private usage: { inputTokens: number; outputTokens: number } | undefined;
  /** Milliseconds of this reply's audio written to the call's audio out. */
  private writtenMs = 0;
  /** Its first audio has been produced. */
  private spoke = false;
  /** The assistant turn has been stored (what the caller heard of it). */
  private recorded = false;
  /** The message item's end (text, audio, item done) has been announced. */
  private outputClosed = false;
  /** While held: what the reply did, to be done for real on release. */
  private heldEffects: (() => void)[] | undefined;
  private settle: (info: ResponseInfo) => void = () => {};
  /** Resolves when a held reply is released or discarded (at once for one never held). */
  private readonly released: Promise<void>;
  private release_: () => void = () => {};

  constructor(private readonly opts: ReplyOptions) {
    opts.turn?.set({ 'parley.response.id': this.id });
    this.done = new Promise((resolve) => (this.settle = resolve));
    this.released = new Promise((resolve) => (this.release_ = resolve));
    if (opts.held) this.heldEffects = [];
    else this.release_();
  }

  /** Whether it is still being prepared unseen. */
  get held(): boolean {
    return this.heldEffects !== undefined;
  }

  /** A held reply goes out: everything it did so far happens now, in order, and the rest as it comes. */
  release(timings: StageTimings, voiceEndedAt: number | undefined, turn?: TurnTrace): void {
    const effects = this.heldEffects;
    if (!effects) return;
    this.opts.timings = timings;
    this.opts.voiceEndedAt = voiceEndedAt;
    if (turn) {
      this.opts.turn = turn;
      turn.set({ 'parley.response.id': this.id, 'parley.turn.prepared': true });
    }
    this.heldEffects = undefined;
    for (const effect of effects) effect();
    this.release_();
  }

  /** A held reply that is not wanted: it stops, and nothing of it was ever seen. */
  discard(): void {
    if (!this.heldEffects) return;
    this.heldEffects = undefined;
    this.abort.abort();
    this.release_();
    this.status = 'cancelled';
    this.settle(this.info());
  }

  /** Does something the client or the call can observe, or keeps it for release while held. */
  private out(effect: () => void): void {
    if (this.heldEffects) this.heldEffects.push(effect);
    else effect();
  }

  /** Still generating (text, tool calls or audio); its audio may play on after that. */
  get generating(): boolean {
    return this.status === 'in_progress';
  }


  start(): void {
    this.out(() => this.opts.ctx.emit({ type: 'response.created', response: this.info() }));
    void this.run().catch((err: Error) => this.finish('failed', `internal: ${err.message}`));
  }

  /**
   * Stops the reply — generation and speech if it is still generating — and drops its unsent audio;
   * the message keeps what the caller heard. Returns the milliseconds of audio dropped.
   */
  stop(reason: 'turn_detected' | 'client_cancelled'): number {
    if (this.held) {
      this.discard();
      return 0;
    }
    this.opts.turn?.abandon(reason === 'turn_detected' ? 'interrupted' : 'cancelled');
    const generating = this.generating;
    if (generating) this.abort.abort();
    const dropped = this.opts.settings.audio ? this.opts.ctx.audio.clear() : 0;
    if (generating || dropped > 0) this.cutToHeard(Math.max(0, this.writtenMs - dropped));
    if (generating) {
      this.closeOutput('incomplete');
      this.finish('cancelled', reason);
    }
    this.record();
    return dropped;
  }

  /** All of its audio has been played: the conversation keeps the whole reply. */
  playbackEnded(): void {
    this.record();
  }

  /**
   * Truncates the message to the words spoken in its first `heardMs` of audio. Where the client
   * truncates the item itself (a WebSocket), `heardMs` is only what it was sent: the item keeps that,
   * unannounced, and the client says where it stopped playing (conversation.item.truncate).
   */
  private cutToHeard(heardMs: number): void {
    const { ctx } = this.opts;
    const message = this.message;
    if (!message || !this.opts.settings.audio) return;
    if (this.opts.inConversation && ctx.conversation.get(message.id)) {
      const cut = ctx.conversation.truncate(message.id, heardMs);
      if (cut.ok && !ctx.audio.clientTruncates) ctx.emit({ type: 'item.truncated', itemId: message.id, contentIndex: 0, audioEndMs: Math.round(heardMs) });
    } else {
      const part = message.content[0];
      if (part?.type === 'output_audio') part.transcript = '';
    }
  }

  /** Stores the assistant turn once, as the conversation has it now. */
  private record(): void {
    const message = this.message;
    if (this.recorded || !message || !this.opts.inConversation || this.generating) return;
    this.recorded = true;
    const said = itemText(message);
    if (said) this.opts.ctx.turnCompleted({ role: 'assistant', text: said });
  }

  private async run(): Promise<void> {
    const { ctx, settings } = this.opts;
    const signal = this.abort.signal;
    if (this.opts.after) await this.opts.after;
    if (signal.aborted) return;
    const startedAt = performance.now();
    let firstTokenAt: number | undefined;
    const calls = new Map<number, FunctionCallItem>();
    const base = [...(this.opts.input ?? ctx.conversation.items)];
    let messages = toChatMessages(base);
    const mcp = this.opts.mcp;
    const tools = mcp ? [...settings.tools, ...mcp.tools().filter((t) => !settings.tools.some((f) => f.name === t.name))] : settings.tools;

    // Its upstream requests' spans go under the turn it answers, else under the call (a reply the
    // client asked for; one prepared before its turn was over).
    const parent = this.opts.turn?.parent ?? ctx.trace?.parent;
    const trace = parent && { ...parent, attributes: { 'parley.response.id': this.id } };
    // The speaker reads the reply's text as it is generated.
    const speaker = settings.audio ? this.opts.speaker(settings.voice, signal, trace) : undefined;
    const speech = speaker ? this.speakAll(speaker, startedAt, () => firstTokenAt) : Promise.resolve();
    const say = (delta: string) => {
      this.ensureMessage();
      this.text += delta;
      const message = this.message!;
      this.out(() => ctx.emit({ type: 'response.text.delta', responseId: this.id, itemId: message.id, outputIndex: this.indexOf(message), audio: settings.audio, delta }));
      speaker?.push(delta);
    };

    let failure: Error | undefined;
    // A round of generation; after MCP calls, another that reads their answers (a few at most).
    for (let round = 0; round < MAX_MCP_ROUNDS; round++) {
      const mcpCalls: PendingMcpCall[] = [];
      try {
        for await (const chunk of this.opts.model.reply({
          messages,
          instructions: settings.instructions,
          temperature: settings.temperature,
          tools,
          toolChoice: round > 0 && typeof settings.toolChoice !== 'string' ? 'auto' : settings.toolChoice,
          ...(settings.maxOutputTokens ? { maxOutputTokens: settings.maxOutputTokens } : {}),
          signal,
          ...(trace ? { trace } : {}),
        })) {
          if (signal.aborted) return;
          firstTokenAt ??= performance.now();
          if (chunk.type === 'text') say(chunk.delta);
          else if (chunk.type === 'usage') this.usage = { inputTokens: chunk.inputTokens, outputTokens: chunk.outputTokens };
          else if (!calls.has(chunk.index) && (mcpCalls[chunk.index] || (chunk.name && mcp?.serverOf(chunk.name) && !settings.tools.some((t) => t.name === chunk.name)))) {
            // A call of an MCP server's tool: made here, not the client's to make.
            const pending = (mcpCalls[chunk.index] ??= { name: chunk.name ?? '', arguments: '' });
            pending.arguments += chunk.argumentsDelta;
          } else this.onToolCallChunk(calls, chunk);
        }
      } catch (err) {
        if (signal.aborted) return;
        failure = err as Error;
        const message = `The language model failed: ${failure.message}`;
        this.out(() => ctx.emit({ type: 'stage.failed', stage: 'llm', code: 'model_error', message, recoverable: true, cause: failure }));
        // The caller hears that something went wrong rather than silence.
        if (!this.text) say(APOLOGY);
      }
      if (signal.aborted) return;
      let answered = false;
      for (const pending of mcpCalls.filter(Boolean)) answered = (await this.runMcpCall(pending)) || answered;
      if (signal.aborted) return;
      if (!answered || failure || calls.size) break;
      messages = toChatMessages([...base, ...this.output]);
    }
    speaker?.end();
    if (signal.aborted) return;
    for (const call of calls.values()) this.finishToolCall(call);
    await speech;
    // Paced out (a WebSocket): the reply is in progress until its last audio is sent.
    if (speaker && ctx.audio.sent) {
      await this.released;
      await ctx.audio.sent();
    }
    if (signal.aborted) return;
    this.usage ??= { inputTokens: messages.reduce((n, m) => n + estimateTokens(m.content), 0), outputTokens: estimateTokens(this.text) };
    this.closeOutput('completed');
    this.finish(failure ? 'failed' : 'completed', failure ? 'model_error' : undefined);
  }

  /** Plays what the speaker says; records which words each piece of audio says, for truncation. */
  private async speakAll(speaker: AsyncIterable<SpokenChunk>, startedAt: number, firstTokenAt: () => number | undefined): Promise<void> {
    const { ctx } = this.opts;
    const signal = this.abort.signal;
    try {
      for await (const chunk of speaker) {
        if (signal.aborted) return;
        if (!chunk.pcm.length) continue;
        if (!this.spoke) {
          this.spoke = true;
          const firstAudioAt = performance.now();
          const tokenAt = firstTokenAt();
          this.out(() => this.audioStarted(startedAt, tokenAt, firstAudioAt));
        }
        const message = this.message;
        this.out(() => {
          const ms = chunk.pcm.length / 48;
          ctx.audio.write(chunk.pcm);
          this.opts.onAudio();
          if (message) ctx.conversation.addSpoken(message.id, ms, chunk.text);
          this.writtenMs += ms;
        });
      }
    } catch (err) {
      if (signal.aborted) return;
      // The text is still delivered; the caller is told the voice failed.
      const message = `Speech synthesis failed: ${(err as Error).message}`;
      this.out(() => ctx.emit({ type: 'stage.failed', stage: 'tts', code: 'synthesis_failed', message, recoverable: true, cause: err as Error }));
    }
  }

  /** The first audio is going out (for a held reply: on release, when it was ready before). */
  private audioStarted(startedAt: number, firstTokenAt: number | undefined, readyAt: number): void {
    const now = performance.now();
    const timings: StageTimings = {
      ...this.opts.timings,
      first_token_ms: Math.round((firstTokenAt ?? readyAt) - startedAt),
      synthesis_ms: Math.round(readyAt - (firstTokenAt ?? readyAt)),
      ...(this.opts.voiceEndedAt !== undefined ? { voice_to_voice_ms: Math.round(now - this.opts.voiceEndedAt) } : {}),
    };
    this.opts.ctx.emit({ type: 'response.audio.started', responseId: this.id, itemId: this.message?.id ?? '', timings });
    this.opts.onTimings?.(timings);
    const turn = this.opts.turn;
    if (!turn) return;
    // The same instants as the timings: the stages up to here add up to voice_to_voice_ms.
    turn.reached('first_token', firstTokenAt ?? readyAt);
    turn.reached('first_audio', now);
    if (timings.voice_to_voice_ms !== undefined) turn.set({ 'parley.turn.voice_to_voice_ms': timings.voice_to_voice_ms });
    if (this.opts.awaitFirstPacket) this.opts.awaitFirstPacket(turn);
    else turn.end();
  }

  private ensureMessage(): void {
    if (this.message) return;
    const audio = this.opts.settings.audio;
    this.message = {
      id: newItemId(),
      type: 'message',
      role: 'assistant',
      status: 'in_progress',
      content: [audio ? { type: 'output_audio', transcript: '' } : { type: 'output_text', text: '' }],
    };
    this.addOutput(this.message);
  }

  private onToolCallChunk(calls: Map<number, FunctionCallItem>, chunk: { index: number; id?: string; name?: string; argumentsDelta: string }): void {
    let call = calls.get(chunk.index);
    if (!call) {
      call = { id: newItemId(), type: 'function_call', status: 'in_progress', callId: chunk.id ?? randomId('call_', 12), name: chunk.name ?? '', arguments: '' };
      calls.set(chunk.index, call);
      this.addOutput(call);
    }
    if (chunk.name && !call.name) call.name = chunk.name;
    if (!chunk.argumentsDelta) return;
    call.arguments += chunk.argumentsDelta;
    const { id: itemId, callId } = call;
    const delta = chunk.argumentsDelta;
    const outputIndex = this.indexOf(call);
    this.out(() => this.opts.ctx.emit({ type: 'response.function_call_arguments.delta', responseId: this.id, itemId, outputIndex, callId, delta }));
  }

  private finishToolCall(call: FunctionCallItem): void {
    const { ctx } = this.opts;
    const outputIndex = this.indexOf(call);
    call.status = 'completed';
    const done = snapshot(call);
    this.out(() => {
      ctx.emit({ type: 'response.function_call_arguments.done', responseId: this.id, itemId: call.id, outputIndex, callId: call.callId, name: call.name, arguments: call.arguments });
      ctx.emit({ type: 'response.output_item.done', responseId: this.id, outputIndex, item: done });
      if (this.opts.inConversation) ctx.emit({ type: 'item.done', item: done, previousItemId: ctx.conversation.previousOf(call.id) });
    });
  }

  /**
   * An MCP call the model made: asked for first when the server requires approval (an
   * mcp_approval_request item; the reply then ends), refused when the client declined, or made —
   * its arguments, progress and answer announced. True when the model has an answer to read.
   */
  private async runMcpCall(pending: PendingMcpCall): Promise<boolean> {
    const { ctx } = this.opts;
    const hub = this.opts.mcp!;
    const server = hub.serverOf(pending.name)!;
    const decision = hub.decide(server, pending.name);
    if (decision.kind === 'ask') {
      const request: McpApprovalRequestItem = { id: newItemId(), type: 'mcp_approval_request', status: 'completed', serverLabel: server.label, name: pending.name, arguments: pending.arguments };
      this.addOutput(request);
      const outputIndex = this.indexOf(request);
      const done = snapshot(request);
      this.out(() => {
        ctx.emit({ type: 'response.output_item.done', responseId: this.id, outputIndex, item: done });
        if (this.opts.inConversation) ctx.emit({ type: 'item.done', item: done, previousItemId: ctx.conversation.previousOf(request.id) });
      });
      return false;
    }
    // Nothing is done on a server while the reply is only prepared.
    await this.released;
    if (this.abort.signal.aborted) return false;
    const call: McpCallItem = {
      id: newItemId(),
      type: 'mcp_call',
      status: 'in_progress',
      serverLabel: server.label,
      name: pending.name,
      arguments: pending.arguments,
      approvalRequestId: decision.approvalRequestId,
      output: null,
      error: null,
    };
    this.addOutput(call);
    const outputIndex = this.indexOf(call);
    const ids = { responseId: this.id, itemId: call.id, outputIndex };
    ctx.emit({ type: 'response.mcp_call_arguments.delta', ...ids, delta: call.arguments });
    ctx.emit({ type: 'response.mcp_call_arguments.done', ...ids, arguments: call.arguments });
    ctx.emit({ type: 'response.mcp_call', phase: 'in_progress', ...ids });
    if (decision.kind === 'denied') call.error = `The user denied this call: ${decision.reason}`;
    else {
      try {
        call.output = await hub.call(server, call.name, call.arguments, this.abort.signal);
      } catch (err) {
        if (this.abort.signal.aborted) return false;
        call.error = (err as Error).message;
      }
    }
    if (this.abort.signal.aborted) return false;
    call.status = call.error ? 'incomplete' : 'completed';
    ctx.emit({ type: 'response.mcp_call', phase: call.error ? 'failed' : 'completed', ...ids });
    const done = snapshot(call);
    ctx.emit({ type: 'response.output_item.done', responseId: this.id, outputIndex, item: done });
    if (this.opts.inConversation) ctx.emit({ type: 'item.done', item: done, previousItemId: ctx.conversation.previousOf(call.id) });
    return true;
  }

  /** A new output item: in the conversation (unless out of band) and announced. */
  private addOutput(item: Item): void {
    const { ctx } = this.opts;
    this.output.push(item);
    const outputIndex = this.output.length - 1;
    // The item as it is now: a held reply announces it later, after it has changed.
    const added = snapshot(item);
    this.out(() => {
      if (this.opts.inConversation) {
        const placed = ctx.conversation.add(item);
        ctx.emit({ type: 'item.added', item: added, previousItemId: placed.ok ? placed.previousItemId : null });
      }
      ctx.emit({ type: 'response.output_item.added', responseId: this.id, outputIndex, item: added });
    });
  }

  /** Ends the message item: its text, its audio, its final status. */
  private closeOutput(status: 'completed' | 'incomplete'): void {
    const message = this.message;
    // Once: a cut (cutToHeard) has already marked the item incomplete, and its end is still announced.
    if (!message || this.outputClosed) return;
    this.outputClosed = true;
    const { ctx, settings } = this.opts;
    const outputIndex = this.indexOf(message);
    const part = message.content[0]!;
    const text = this.text.trim();
    if (status === 'completed') {
      if (part.type === 'output_audio') part.transcript = text;
      else if (part.type === 'output_text') part.text = text;
    } else if (part.type === 'output_text') {
      part.text = text;
    }
    const said = itemText(message);
    message.status = status;
    const done = snapshot(message);
    this.out(() => {
      ctx.emit({ type: 'response.text.done', responseId: this.id, itemId: message.id, outputIndex, audio: settings.audio, text: said });
      if (settings.audio) ctx.emit({ type: 'response.audio.done', responseId: this.id, itemId: message.id, outputIndex });
      ctx.emit({ type: 'response.output_item.done', responseId: this.id, outputIndex, item: done });
      if (this.opts.inConversation) ctx.emit({ type: 'item.done', item: done, previousItemId: ctx.conversation.previousOf(message.id) });
    });
  }

  private finish(status: Exclude<ResponseStatus, 'in_progress'>, reason?: string): void {
    if (!this.generating) return;
    this.status = status;
    this.reason = reason;
    const info = this.info();
    this.out(() => {
      // A reply that ends before any audio of it was queued (text only, failed, cancelled) ends its turn.
      const turn = this.opts.turn;
      if (turn && !turn.has('first_audio')) turn.abandon(status === 'completed' ? 'no_audio' : status, status === 'failed' ? new Error(reason ?? 'failed') : undefined);
      this.opts.ctx.emit({ type: 'response.done', response: info });
      // A reply without audio has nothing more to wait for.
      if (!this.opts.settings.audio) this.record();
      this.settle(info);
    });
  }

  private info(): ResponseInfo {
    return {
      id: this.id,
      status: this.status,
      ...(this.reason ? { reason: this.reason } : {}),
      output: [...this.output],
      ...(this.usage ? { usage: this.usage } : {}),
      inConversation: this.opts.inConversation,
      metadata: this.opts.metadata ?? null,
    };
  }

  private indexOf(item: Item): number {
    return this.output.indexOf(item);
  }

}

/** A copy of an item as it is now, for an event about it. */
function snapshot<T extends Item>(item: T): T {
  return structuredClone(item);
}
