// An upstream OpenAI Realtime model's server events (GA names; a beta upstream's are read as GA first,
// session/openaiBeta.ts) in Parley's terms: the CallEvents every door already speaks (a reply, its
// items, text and function calls; the caller's turn and its transcript; the conversation's changes)
// and the reply's audio as PCM. The items are Parley's objects, kept up to date as the upstream adds
// to them, so that the call's conversation holds what the upstream said.
import type { RealtimeAudioFormat } from '../../config/models.js';
import { WIRE_RATE, decodeWireAudio } from '../../media/audio/wireAudio.js';
import { contentFromWire, itemFromWire } from '../../session/openaiWire.js';
import type { FunctionCallItem, Item, MessageItem } from '../../session/conversation.js';
import type { ResponseInfo, ResponseStatus } from '../../session/events.js';
import { ENCODING_OF_FORMAT } from './openaiSession.js';
import type { CommandOrigin, UpstreamEvent } from './types.js';

type Json = Record<string, any>;

export interface EventMapperOptions {
  /** The upstream's audio format (its replies' audio is decoded from it). */
  audioFormat: RealtimeAudioFormat;
  /** An item of the call's conversation (the client's, the bridge's): the upstream's echo of it adds nothing. */
  known(itemId: string): Item | undefined;
  /** Whose command an event id was, and which (its error goes to the client or the log). */
  commandOf?(eventId: string): { origin: CommandOrigin; command: string } | undefined;
}

/** A reply in progress: what the client has been told of it. */
interface ResponseState {
  info: ResponseInfo;
  audio: boolean;
}

/** Items the upstream made that are remembered at most (replies' and the caller's turns' in progress). */
const MAX_ITEMS = 256;
const STATUSES: ReadonlySet<string> = new Set(['completed', 'cancelled', 'incomplete', 'failed']);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

export class EventMapper {
  private readonly responses = new Map<string, ResponseState>();
  /** Items the upstream made, by id (the call's conversation holds those of its conversation too). */
  private readonly items = new Map<string, Item>();
  /** Items cut where the caller stopped hearing them: what the upstream says of them later is not kept. */
  private readonly frozen = new Set<string>();

  constructor(private readonly opts: EventMapperOptions) {}

  /** One server event (GA names) as what the bridge does with it; [] for what Parley has no use for. */
  map(e: Json): UpstreamEvent[] {
    switch (e.type) {
      case 'input_audio_buffer.speech_started':
        return [{ type: 'input.speech_started', itemId: str(e.item_id), audioStartMs: num(e.audio_start_ms) }];
      case 'input_audio_buffer.speech_stopped':
        return [{ type: 'input.speech_stopped', itemId: str(e.item_id), audioEndMs: num(e.audio_end_ms) }];
      case 'input_audio_buffer.committed':
        return [{ type: 'input.committed', itemId: str(e.item_id), previousItemId: typeof e.previous_item_id === 'string' ? e.previous_item_id : null }];
      case 'input_audio_buffer.cleared':
        return [{ type: 'input.cleared' }];
      case 'input_audio_buffer.timeout_triggered':
        return [{ type: 'input.timeout_triggered', audioStartMs: num(e.audio_start_ms), audioEndMs: num(e.audio_end_ms) }];
      case 'conversation.item.added':
        return this.itemAdded(e);
      case 'conversation.item.done':
        return this.itemDone(e);
      case 'conversation.item.deleted':
        this.items.delete(str(e.item_id));
        return [{ type: 'item.deleted', itemId: str(e.item_id) }];
      case 'conversation.item.input_audio_transcription.delta':
        return [{ type: 'transcription.delta', itemId: str(e.item_id), delta: str(e.delta) }];
      case 'conversation.item.input_audio_transcription.completed':
        return this.transcribed(str(e.item_id), str(e.transcript));
      case 'conversation.item.input_audio_transcription.failed':
        return [{ type: 'transcription.failed', itemId: str(e.item_id), message: str(e.error?.message) || 'The upstream could not transcribe the audio.' }];
      case 'response.created':
        return this.responseCreated(e.response ?? {});
      case 'response.output_item.added':
        return this.outputAdded(e);
      case 'response.output_item.done':
        return this.outputDone(e);
      case 'response.output_audio.delta':
        return this.audio(e);
      case 'response.output_audio.done':
        return [{ type: 'response.audio.done', responseId: str(e.response_id), itemId: str(e.item_id), outputIndex: num(e.output_index) }];
      case 'response.output_audio_transcript.delta':
      case 'response.output_text.delta':
        return this.textDelta(e, e.type === 'response.output_audio_transcript.delta');
      case 'response.output_audio_transcript.done':
      case 'response.output_text.done':
        return this.textDone(e, e.type === 'response.output_audio_transcript.done');
      case 'response.function_call_arguments.delta':
        return this.argumentsDelta(e);
      case 'response.function_call_arguments.done':
        return this.argumentsDone(e);
      case 'response.done':
        return this.responseDone(e.response ?? {});
      case 'error': {
        const error = e.error ?? {};
        const eventId = str(error.event_id);
        const command = eventId ? this.opts.commandOf?.(eventId) : undefined;
        return [{ type: 'upstream.error', code: str(error.code) || str(error.type) || 'upstream_error', message: str(error.message), ...(command ?? {}) }];
      }
      // The session's confirmations are the upstream's business (openaiUpstream.ts); the upstream's
      // truncations follow Parley's, which are what the caller heard; content parts, rate limits and
      // the rest are not Parley's to tell.
      default:
        return [];
    }
  }

  /** Parley cut the item where the caller stopped hearing it: its words stay as they are now. */
  freeze(itemId: string): void {
    this.frozen.add(itemId);
    if (this.frozen.size > MAX_ITEMS) this.frozen.delete(this.frozen.values().next().value!);
  }

  /** The item `id` as the upstream may still change it (not one Parley cut). */
  private changeable(id: string): Item | undefined {
    return this.frozen.has(id) ? undefined : this.items.get(id);
  }

  private remember(item: Item): Item {
    this.items.set(item.id, item);
    if (this.items.size > MAX_ITEMS) this.items.delete(this.items.keys().next().value!);
    return item;
  }

  /** The item `id` as Parley holds it: one the upstream made, or one of the call's conversation. */
  private find(id: string): Item | undefined {
    return this.items.get(id) ?? this.opts.known(id);
  }

  private itemAdded(e: Json): UpstreamEvent[] {
    const wire = e.item ?? {};
    const id = str(wire.id);
    // The upstream's copy of an item the call already has (the client's, the bridge's picture).
    if (!id || this.opts.known(id)) return [];
    const item = this.items.get(id) ?? itemFromWire(wire);
    if (!item) return [];
    this.remember(item);
    return [{ type: 'item.added', item, previousItemId: typeof e.previous_item_id === 'string' ? e.previous_item_id : null }];
  }

  private itemDone(e: Json): UpstreamEvent[] {
    const wire = e.item ?? {};
    const item = this.items.get(str(wire.id));
    if (!item) return [];
    if (!this.frozen.has(item.id)) update(item, wire);
    return [{ type: 'item.done', item, previousItemId: typeof e.previous_item_id === 'string' ? e.previous_item_id : null }];
  }

  private transcribed(itemId: string, transcript: string): UpstreamEvent[] {
    const item = this.find(itemId);
    if (item?.type === 'message') {
      const part = item.content.find((c) => c.type === 'input_audio');
      if (part?.type === 'input_audio') part.transcript = transcript;
    }
    return [{ type: 'transcription.completed', itemId, transcript }];
  }

  private responseCreated(r: Json): UpstreamEvent[] {
    const id = str(r.id);
    if (!id) return [];
    const modalities = Array.isArray(r.output_modalities) ? r.output_modalities : ['audio'];
    const info: ResponseInfo = { id, status: 'in_progress', output: [], inConversation: r.conversation_id !== null, metadata: r.metadata ?? null };
    this.responses.set(id, { info, audio: modalities.includes('audio') });
    return [{ type: 'response.created', response: { ...info, output: [] } }];
  }

  private outputAdded(e: Json): UpstreamEvent[] {
    const responseId = str(e.response_id);
    const response = this.responses.get(responseId);
    const wire = e.item ?? {};
    const item = this.items.get(str(wire.id)) ?? itemFromWire(wire);
    if (!item) return [];
    this.remember(item);
    // A reply's message says from the start whether it is spoken (the doors send its audio by it).
    if (item.type === 'message' && item.content.length === 0) {
      item.content.push(response?.audio === false ? { type: 'output_text', text: '' } : { type: 'output_audio', transcript: '' });
    }
    response?.info.output.push(item);
    return [{ type: 'response.output_item.added', responseId, outputIndex: num(e.output_index), item: snapshot(item) }];
  }

  private outputDone(e: Json): UpstreamEvent[] {
    const wire = e.item ?? {};
    const item = this.items.get(str(wire.id));
    if (!item) return [];
    if (!this.frozen.has(item.id)) update(item, wire);
    return [{ type: 'response.output_item.done', responseId: str(e.response_id), outputIndex: num(e.output_index), item: snapshot(item) }];
  }

  private audio(e: Json): UpstreamEvent[] {
    const encoding = ENCODING_OF_FORMAT[this.opts.audioFormat];
    const pcm = decodeWireAudio(Buffer.from(str(e.delta), 'base64'), encoding);
    if (pcm.length === 0) return [];
    return [{ type: 'upstream.audio', responseId: str(e.response_id), itemId: str(e.item_id), pcm, rate: WIRE_RATE[encoding] }];
  }

  private textDelta(e: Json, audio: boolean): UpstreamEvent[] {
    const itemId = str(e.item_id);
    const delta = str(e.delta);
    const item = this.changeable(itemId);
    if (item?.type === 'message') {
      const part = textPart(item, audio);
      if (part.type === 'output_audio') part.transcript = (part.transcript ?? '') + delta;
      else if (part.type === 'output_text') part.text += delta;
    }
    return [{ type: 'response.text.delta', responseId: str(e.response_id), itemId, outputIndex: num(e.output_index), audio, delta }];
  }

  private textDone(e: Json, audio: boolean): UpstreamEvent[] {
    const itemId = str(e.item_id);
    const item = this.changeable(itemId);
    let text = str(audio ? e.transcript : e.text);
    if (item?.type === 'message') {
      const part = textPart(item, audio);
      if (part.type === 'output_audio') part.transcript = text || part.transcript;
      else if (part.type === 'output_text') part.text = text || part.text;
      text ||= part.type === 'output_audio' ? (part.transcript ?? '') : part.type === 'output_text' ? part.text : '';
    }
    return [{ type: 'response.text.done', responseId: str(e.response_id), itemId, outputIndex: num(e.output_index), audio, text }];
  }

  private argumentsDelta(e: Json): UpstreamEvent[] {
    const itemId = str(e.item_id);
    const call = this.items.get(itemId);
    const delta = str(e.delta);
    if (call?.type === 'function_call') call.arguments += delta;
    const callId = str(e.call_id) || (call?.type === 'function_call' ? call.callId : '');
    return [{ type: 'response.function_call_arguments.delta', responseId: str(e.response_id), itemId, outputIndex: num(e.output_index), callId, delta }];
  }

  private argumentsDone(e: Json): UpstreamEvent[] {
    const itemId = str(e.item_id);
    const found = this.items.get(itemId);
    const call: FunctionCallItem | undefined = found?.type === 'function_call' ? found : undefined;
    if (call) {
      if (typeof e.arguments === 'string') call.arguments = e.arguments;
      if (typeof e.name === 'string' && e.name) call.name = e.name;
      call.status = 'completed';
    }
    return [
      {
        type: 'response.function_call_arguments.done',
        responseId: str(e.response_id),
        itemId,
        outputIndex: num(e.output_index),
        callId: str(e.call_id) || call?.callId || '',
        name: str(e.name) || call?.name || '',
        arguments: typeof e.arguments === 'string' ? e.arguments : (call?.arguments ?? ''),
      },
    ];
  }

  private responseDone(r: Json): UpstreamEvent[] {
    const id = str(r.id);
    const state = this.responses.get(id);
    this.responses.delete(id);
    const info: ResponseInfo = state?.info ?? { id, status: 'in_progress', output: [], inConversation: r.conversation_id !== null, metadata: r.metadata ?? null };
    info.status = STATUSES.has(r.status) ? (r.status as ResponseStatus) : 'completed';
    const details = r.status_details ?? {};
    const reason = str(details.reason) || str(details.error?.code);
    if (reason) info.reason = reason;
    for (const wire of Array.isArray(r.output) ? (r.output as Json[]) : []) {
      const item = this.items.get(str(wire.id));
      if (item) {
        if (!this.frozen.has(item.id)) update(item, wire);
      }
      else {
        const made = itemFromWire(wire);
        if (made) info.output.push(this.remember(made));
      }
    }
    const usage = r.usage;
    if (usage && typeof usage === 'object') info.usage = { inputTokens: num(usage.input_tokens), outputTokens: num(usage.output_tokens) };
    // The reply's items stay in the call's conversation; this one forgets them.
    for (const item of info.output) this.items.delete(item.id);
    return [{ type: 'response.done', response: { ...info, output: info.output.map(snapshot) } }];
  }
}

/** A reply message's text part of the kind a delta adds to (made when the message has none). */
function textPart(item: MessageItem, audio: boolean) {
  const type = audio ? 'output_audio' : 'output_text';
  let part = item.content.find((c) => c.type === type);
  if (!part) {
    part = audio ? { type: 'output_audio', transcript: '' } : { type: 'output_text', text: '' };
    item.content.push(part);
  }
  return part;
}

/** Brings an item up to what the upstream says it is now (status, finished text, a call's arguments). */
function update(item: Item, wire: Json): void {
  if (wire.status === 'in_progress' || wire.status === 'completed' || wire.status === 'incomplete') item.status = wire.status;
  if (item.type === 'function_call') {
    if (typeof wire.arguments === 'string') item.arguments = wire.arguments;
    if (typeof wire.name === 'string' && wire.name) item.name = wire.name;
    if (typeof wire.call_id === 'string' && wire.call_id) item.callId = wire.call_id;
    return;
  }
  if (item.type !== 'message' || !Array.isArray(wire.content)) return;
  for (const c of wire.content as Json[]) {
    const part = contentFromWire(item.role, c);
    if (!part) continue;
    const mine = item.content.find((p) => p.type === part.type);
    if (!mine) item.content.push(part);
    // What the upstream says in full replaces what the deltas made; an empty one keeps them.
    else if (mine.type === 'output_audio' || mine.type === 'input_audio') {
      if (part.type === mine.type && part.transcript) mine.transcript = part.transcript;
    } else if ((mine.type === 'output_text' || mine.type === 'input_text') && part.type === mine.type && part.text) mine.text = part.text;
  }
}

/** A copy of an item as it is now, for an event about it. */
function snapshot<T extends Item>(item: T): T {
  return structuredClone(item);
}
