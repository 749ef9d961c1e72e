// One call's session with an upstream model over OpenAI's Realtime protocol (GA, or the beta dialect):
// the socket, the session configured at once and followed, the client events the bridge's commands
// become, and the server events read back in Parley's terms (openaiEvents.ts). Until the upstream has
// confirmed the session, what the bridge sends waits here (bounded: the oldest audio goes first).
import type { RealtimeEntry } from '../../config/models.js';
import { encodeWireAudio, WIRE_RATE } from '../../media/audio/wireAudio.js';
import { imageDataUrl, type ContentPart, type Item } from '../../session/conversation.js';
import { clientEventToBeta, serverEventFromBeta } from '../../session/openaiBeta.js';
import { wireItem } from '../../session/openaiWire.js';
import type { Session } from '../../session/session.js';
import { randomId } from '../../system/ids.js';
import type { ResponseRequest } from '../types.js';
import { EventMapper } from './openaiEvents.js';
import { ENCODING_OF_FORMAT, sessionDelta, upstreamSession, upstreamVoice } from './openaiSession.js';
import { UpstreamSocket } from './socket.js';
import type { CommandOrigin, UpstreamListener, UpstreamModel, UpstreamSessionOptions } from './types.js';

type Json = Record<string, any>;

export interface OpenAiUpstreamLimits {
  /** The largest message read from the upstream. */
  maxPayloadBytes: number;
  /** Events a second the upstream may send on average. */
  maxEventsPerSecond: number;
}

/** Commands held until the session is confirmed, and the audio among them (20 ms appends: 10 s). */
const MAX_WAITING_COMMANDS = 256;
const MAX_WAITING_APPENDS = 500;
/** Event ids remembered for the errors that answer them. */
const MAX_ORIGINS = 512;

export class OpenAiUpstream implements UpstreamModel {
  readonly inputSampleRate: number;
  private socket: UpstreamSocket | undefined;
  private listener: UpstreamListener | undefined;
  private readonly mapper: EventMapper;
  private readonly encoding;
  private ready = false;
  private closed = false;
  private waiting: Json[] = [];
  private waitingAppends = 0;
  /** The session the bridge wants (sent once the socket opens, if it changes before). */
  private wanted: { session: Session; options: UpstreamSessionOptions } | undefined;
  /** The session as last sent (later updates send what changed). */
  private sentSession: Json | undefined;
  private readonly commands = new Map<string, { origin: CommandOrigin; command: string }>();
  private readonly eventPrefix = randomId('pb_', 6);
  private seq = 0;

  constructor(
    private readonly entry: RealtimeEntry,
    private readonly limits: OpenAiUpstreamLimits,
    /** An item of the call's conversation (the upstream's echo of it is not news). */
    private readonly known: (itemId: string) => Item | undefined,
  ) {
    this.encoding = ENCODING_OF_FORMAT[entry.audioFormat];
    this.inputSampleRate = WIRE_RATE[this.encoding];
    this.mapper = new EventMapper({ audioFormat: entry.audioFormat, known, commandOf: (id) => this.commands.get(id) });
  }

  open(session: Session, options: UpstreamSessionOptions, listener: UpstreamListener): void {
    this.listener = listener;
    this.wanted = { session, options };
    const { entry } = this;
    this.socket = new UpstreamSocket(
      {
        modelId: entry.id,
        url: entry.url,
        model: entry.model,
        ...(entry.apiKey ? { apiKey: entry.apiKey } : {}),
        beta: entry.dialect === 'beta',
        maxPayloadBytes: this.limits.maxPayloadBytes,
        maxEventsPerSecond: this.limits.maxEventsPerSecond,
      },
      {
        // The session first: whatever waits is sent once the upstream has confirmed it.
        open: () => this.configure(this.wanted!.session, this.wanted!.options),
        message: (event) => this.read(event),
        failed: (failure) => {
          this.closed = true;
          listener.failed(failure);
        },
      },
    );
  }

  /** Bytes sent and not yet taken by the upstream. */
  get bufferedBytes(): number {
    return this.socket?.bufferedBytes ?? 0;
  }

  configure(session: Session, options: UpstreamSessionOptions): void {
    this.wanted = { session, options };
    if (!this.socket?.isOpen) return;
    const next = upstreamSession(session, this.entry.audioFormat, this.entry.dialect, options);
    const delta = sessionDelta(this.sentSession, next);
    this.sentSession = next;
    // The first configures the connection (its errors end it); later ones are the client's changes.
    if (delta) this.send({ type: 'session.update', session: delta }, this.ready ? 'client' : 'bridge', true);
  }

  appendAudio(pcm: Int16Array): void {
    this.send({ type: 'input_audio_buffer.append', audio: encodeWireAudio(pcm, this.encoding).toString('base64') }, 'bridge');
  }

  commitInput(): void {
    this.send({ type: 'input_audio_buffer.commit' }, 'client');
  }

  clearInput(): void {
    this.send({ type: 'input_audio_buffer.clear' }, 'client');
  }

  createResponse(request: ResponseRequest, origin: CommandOrigin): void {
    const r: Json = {};
    if (request.instructions !== undefined) r.instructions = request.instructions ?? '';
    if (request.tools) r.tools = request.tools.map((t) => ({ type: 'function', name: t.name, description: t.description ?? '', parameters: t.parameters ?? { type: 'object', properties: {} } }));
    if (request.toolChoice !== undefined) r.tool_choice = typeof request.toolChoice === 'string' ? request.toolChoice : { type: 'function', name: request.toolChoice.name };
    if (request.outputModalities) r.output_modalities = request.outputModalities.includes('audio') ? ['audio'] : ['text'];
    if (request.maxOutputTokens !== undefined) r.max_output_tokens = request.maxOutputTokens ?? 'inf';
    if (request.voice) r.audio = { output: { voice: upstreamVoice(request.voice) } };
    if (request.conversation) r.conversation = request.conversation;
    if (request.metadata !== undefined) r.metadata = request.metadata;
    // Items of the conversation are referred to; the others go up whole.
    if (request.input) r.input = request.input.map((item) => (this.known(item.id) ? { type: 'item_reference', id: item.id } : this.creatable(item))).filter(Boolean);
    this.send({ type: 'response.create', ...(Object.keys(r).length ? { response: r } : {}) }, origin);
  }

  cancelResponse(): void {
    this.send({ type: 'response.cancel' }, 'bridge');
  }

  addItem(item: Item, _previousItemId: string | null | undefined, origin: CommandOrigin, audio?: Int16Array): void {
    // Appended: the upstream's order is the order items reach it (an item placed before another the
    // upstream has not seen would be refused).
    const wire = this.creatable(item, audio);
    if (wire) this.send({ type: 'conversation.item.create', item: wire }, origin);
  }

  deleteItem(itemId: string): void {
    this.send({ type: 'conversation.item.delete', item_id: itemId }, 'bridge');
  }

  truncate(itemId: string, audioEndMs: number): void {
    this.mapper.freeze(itemId);
    this.send({ type: 'conversation.item.truncate', item_id: itemId, content_index: 0, audio_end_ms: Math.max(0, Math.floor(audioEndMs)) }, 'bridge');
  }

  close(): void {
    this.closed = true;
    this.waiting = [];
    this.socket?.close();
  }

  /**
   * An item as the upstream can be given it: the audio of a caller's item as its audio (else its
   * words as text), an assistant's spoken words as text (a model is given no audio of its own), a
   * picture as its JPEG (the beta interface takes none). Undefined when nothing of it can go up.
   */
  private creatable(item: Item, audio?: Int16Array): Json | undefined {
    if (item.type !== 'message') {
      if (item.type !== 'function_call' && item.type !== 'function_call_output') return undefined;
      const { object: _object, ...wire } = wireItem(item) as Json;
      return wire;
    }
    const assistant = item.role === 'assistant';
    const content: Json[] = [];
    for (const c of item.content as ContentPart[]) {
      if (c.type === 'input_image') {
        if (this.entry.dialect === 'ga') content.push({ type: 'input_image', image_url: imageDataUrl(c.image), detail: c.detail });
      } else if (c.type === 'input_audio' && audio && !c.transcript) {
        content.push({ type: 'input_audio', audio: encodeWireAudio(audio, this.encoding).toString('base64') });
      } else {
        const text = c.type === 'input_text' || c.type === 'output_text' ? c.text : (c.transcript ?? '');
        if (text) content.push(assistant ? { type: 'output_text', text } : { type: 'input_text', text });
      }
    }
    if (content.length === 0) return undefined;
    return { id: item.id, type: 'message', role: item.role, content };
  }

  /**
   * Sends a client event with an id of this connection, its origin remembered for the error that may
   * answer it. Before the session is confirmed only the session goes out; the rest waits.
   */
  private send(event: Json, origin: CommandOrigin, now = false): void {
    if (this.closed) return;
    const eventId = `${this.eventPrefix}${(this.seq++).toString(36)}`;
    const message = { ...event, event_id: eventId };
    if (event.type !== 'input_audio_buffer.append') {
      this.commands.set(eventId, { origin, command: String(event.type) });
      if (this.commands.size > MAX_ORIGINS) this.commands.delete(this.commands.keys().next().value!);
    }
    if (!this.ready && !now) return this.hold(message);
    this.socket?.send(this.entry.dialect === 'beta' ? clientEventToBeta(message) : message);
  }

  private hold(message: Json): void {
    const append = message.type === 'input_audio_buffer.append';
    if (append) {
      // The caller's oldest audio goes first: what they say now matters more.
      if (this.waitingAppends >= MAX_WAITING_APPENDS) {
        const at = this.waiting.findIndex((m) => m.type === 'input_audio_buffer.append');
        if (at >= 0) this.waiting.splice(at, 1);
        this.waitingAppends--;
      }
      this.waitingAppends++;
    } else if (this.waiting.length - this.waitingAppends >= MAX_WAITING_COMMANDS) return;
    this.waiting.push(message);
  }

  private read(raw: Record<string, unknown>): void {
    const event = this.entry.dialect === 'beta' ? serverEventFromBeta(raw) : (raw as Json);
    const listener = this.listener!;
    if (event.type === 'session.updated' && !this.ready) {
      this.ready = true;
      listener.event({ type: 'upstream.ready' });
      for (const message of this.waiting.splice(0)) {
        if (this.closed) return;
        this.socket?.send(this.entry.dialect === 'beta' ? clientEventToBeta(message) : message);
      }
      this.waitingAppends = 0;
      return;
    }
    for (const mapped of this.mapper.map(event)) {
      if (this.closed) return;
      listener.event(mapped);
    }
  }
}
