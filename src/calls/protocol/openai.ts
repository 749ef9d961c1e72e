// OpenAI's Realtime (GA) protocol on the `oai-events` data channel, as its published clients
// (@openai/agents-realtime, the openai library) send and read it: every client event validated by
// schema, every server event with an event_id, items and responses with ids, errors naming the
// client event that caused them.
import { Type, type Static } from '@sinclair/typebox';
import { Ajv } from 'ajv';
import { randomId } from '../../system/ids.js';
import type { ResponseRequest } from '../../agent/types.js';
import { newItemId, type ContentPart, type Item } from '../../session/conversation.js';
import { itemFromWire as wireToItem, wireItem } from '../../session/openaiWire.js';
import { noEventLeft, type CallEvent, type ResponseInfo } from '../../session/events.js';
import type { SessionDefaults } from '../../session/session.js';
import { MAX_AUDIO_MESSAGE_BYTES, MAX_MESSAGE_BYTES, readClientMessage } from './message.js';
import { StillImageError } from '../../media/stillImage.js';
import { applyOpenAiSession, openAiSessionObject, paramProblem, ToolChoiceSchema, toolChoiceOf, type ParamProblem } from './openaiSession.js';
import type { CallControl, ClientProtocol } from './types.js';

const Id = Type.String({ minLength: 1, maxLength: 64 });
const Text = Type.String({ maxLength: 32 * 1024 });

/**
 * An input_image's data URL: OpenAI's image types, base64. Bounded by the message that carries it
 * (15 MiB over a WebSocket, DATA_CHANNEL_MESSAGE_BYTES over a data channel); the picture is decoded,
 * scaled and kept as a JPEG (the item carries that, not the original).
 */
const MAX_IMAGE_URL_CHARS = MAX_AUDIO_MESSAGE_BYTES;
/** A data channel message carrying an input_image may be this large (libdatachannel's SCTP takes 256 KiB). */
const DATA_CHANNEL_IMAGE_MESSAGE_BYTES = 256 * 1024;
const DATA_URL = /^data:image\/(png|jpeg|jpg|webp|gif);base64,/;
/** Client events that wait while a picture of an earlier one is decoded (so they stay in order), and their bytes. */
const MAX_WAITING_EVENTS = 256;
const MAX_WAITING_BYTES = 2 * MAX_AUDIO_MESSAGE_BYTES;

const ContentPartSchema = Type.Union([
  Type.Object({
    type: Type.Literal('input_image'),
    image_url: Type.String({ maxLength: MAX_IMAGE_URL_CHARS }),
    detail: Type.Optional(Type.Union([Type.Literal('auto'), Type.Literal('low'), Type.Literal('high')])),
  }),
  Type.Object({ type: Type.Union([Type.Literal('input_text'), Type.Literal('text'), Type.Literal('output_text')]), text: Text }),
  Type.Object({
    type: Type.Union([Type.Literal('input_audio'), Type.Literal('output_audio'), Type.Literal('audio')]),
    transcript: Type.Optional(Type.Union([Text, Type.Null()])),
    // A user's audio (base64, the session's input format), transcribed into the item.
    audio: Type.Optional(Type.String()),
  }),
]);

const ItemSchema = Type.Union([
  Type.Object({
    id: Type.Optional(Id),
    type: Type.Optional(Type.Literal('message')),
    role: Type.Union([Type.Literal('user'), Type.Literal('assistant'), Type.Literal('system')]),
    content: Type.Array(ContentPartSchema, { minItems: 1, maxItems: 16 }),
  }),
  Type.Object({ id: Type.Optional(Id), type: Type.Literal('function_call_output'), call_id: Id, output: Text }),
  Type.Object({ id: Type.Optional(Id), type: Type.Literal('function_call'), call_id: Id, name: Type.String({ maxLength: 128 }), arguments: Text }),
  // The client's answer to an MCP tool's approval request.
  Type.Object({ id: Type.Optional(Id), type: Type.Literal('mcp_approval_response'), approval_request_id: Id, approve: Type.Boolean(), reason: Type.Optional(Type.Union([Text, Type.Null()])) }),
]);

const ResponseSchema = Type.Object({
  instructions: Type.Optional(Type.String({ maxLength: 32 * 1024 })),
  tools: Type.Optional(Type.Array(Type.Object({ type: Type.String(), name: Type.Optional(Type.String()), description: Type.Optional(Type.String()), parameters: Type.Optional(Type.Record(Type.String(), Type.Unknown())) }), { maxItems: 128 })),
  tool_choice: Type.Optional(ToolChoiceSchema),
  output_modalities: Type.Optional(Type.Array(Type.Union([Type.Literal('audio'), Type.Literal('text')]), { minItems: 1, maxItems: 2 })),
  max_output_tokens: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 4096 }), Type.Literal('inf')])),
  audio: Type.Optional(Type.Object({ output: Type.Optional(Type.Object({ voice: Type.Optional(Type.String({ maxLength: 64 })) })) })),
  conversation: Type.Optional(Type.Union([Type.Literal('auto'), Type.Literal('none')])),
  input: Type.Optional(Type.Array(Type.Union([ItemSchema, Type.Object({ type: Type.Literal('item_reference'), id: Id })]), { maxItems: 256 })),
  metadata: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])),
});

/** The client events, each with its schema (`type` and `event_id` are checked before). */
const CLIENT_EVENTS = {
  'session.update': Type.Object({ session: Type.Record(Type.String(), Type.Unknown()) }),
  'input_audio_buffer.append': Type.Object({ audio: Type.String() }),
  'input_audio_buffer.commit': Type.Object({}),
  'input_audio_buffer.clear': Type.Object({}),
  'conversation.item.create': Type.Object({ item: ItemSchema, previous_item_id: Type.Optional(Type.Union([Id, Type.Null()])) }),
  'conversation.item.retrieve': Type.Object({ item_id: Id }),
  'conversation.item.truncate': Type.Object({ item_id: Id, content_index: Type.Integer({ minimum: 0 }), audio_end_ms: Type.Integer({ minimum: 0 }) }),
  'conversation.item.delete': Type.Object({ item_id: Id }),
  'response.create': Type.Object({ response: Type.Optional(ResponseSchema) }),
  'response.cancel': Type.Object({ response_id: Type.Optional(Id) }),
  'output_audio_buffer.clear': Type.Object({}),
} as const;
type ClientEventType = keyof typeof CLIENT_EVENTS;
/** The events that carry audio: over a WebSocket they may be as large as OpenAI takes (15 MiB). */
type ClientEvent<T extends ClientEventType> = Static<(typeof CLIENT_EVENTS)[T]> & { event_id?: string };

const ajv = new Ajv({ strict: false });
const validators = Object.fromEntries(Object.entries(CLIENT_EVENTS).map(([type, schema]) => [type, ajv.compile(schema)])) as Record<ClientEventType, ReturnType<typeof ajv.compile>>;

/** The audio of a client's user item (its first audio part that carries some), to transcribe. */
function audioOf(w: Static<typeof ItemSchema>): string | undefined {
  if (w.type !== undefined && w.type !== 'message') return undefined;
  if (w.role !== 'user') return undefined;
  for (const c of w.content) if ('audio' in c && c.audio && !c.transcript) return c.audio;
  return undefined;
}

/** A client's item in Parley's terms (its pictures are decoded first: itemWithImages). */
function itemFromWire(w: Static<typeof ItemSchema>): Item {
  if ('content' in w && w.content.some((c) => c.type === 'input_image')) throw new Error('input_image parts are decoded before the item is made (withImages)');
  return wireToItem({ ...w, id: w.id ?? newItemId() })!;
}

type WireItem = Static<typeof ItemSchema>;

/** Whether a client's item has pictures (they are decoded before it is added). */
function hasImages(w: WireItem | { type: 'item_reference' }): boolean {
  return 'content' in w && w.content.some((c) => c.type === 'input_image');
}

/**
 * A client's item with its input_image parts decoded: the pictures as the JPEGs kept of them. Rejects
 * with a problem for the client (not a data URL, not an image, the node too busy).
 */
async function itemWithImages(w: WireItem, control: CallControl): Promise<Item> {
  if (!('content' in w)) return itemFromWire(w);
  if (w.role === 'assistant') throw problem('invalid_value', 'Only user and system messages may carry input_image.', 'item.content');
  const parts: ContentPart[] = [];
  for (const c of w.content) {
    if (c.type !== 'input_image') {
      parts.push(...(itemFromWire({ ...w, content: [c] }) as { content: ContentPart[] }).content);
      continue;
    }
    const match = DATA_URL.exec(c.image_url);
    if (!match) throw problem('invalid_image_url', 'input_image.image_url must be a data URL of a PNG, JPEG, WebP or GIF image (data:image/png;base64,…).', 'item.content.image_url');
    const bytes = Buffer.from(c.image_url.slice(match[0].length), 'base64');
    try {
      const image = await control.decodeImage(bytes);
      parts.push({ type: 'input_image', image, detail: c.detail ?? 'auto', source: 'client' });
    } catch (err) {
      // A full decoder or a decode timed out is the server's state, not the client's picture.
      if (err instanceof StillImageError && err.serverBusy) throw problem('server_busy', err.message, 'item.content.image_url', 'server_error');
      throw problem('invalid_image', `input_image could not be read as an image: ${(err as Error).message}`, 'item.content.image_url');
    }
  }
  return { id: w.id ?? newItemId(), type: 'message', role: w.role, status: 'completed', content: parts };
}

/** Whether a client's raw item has an input_image part (before its schema is checked). */
function carriesImage(item: unknown): boolean {
  const content = (item as { content?: unknown } | null)?.content;
  return Array.isArray(content) && content.some((c) => (c as { type?: unknown } | null)?.type === 'input_image');
}

/** Whether a client's item carries audio (base64 in a part), which may make it large over a WebSocket. */
function carriesAudio(item: unknown): boolean {
  const content = (item as { content?: unknown } | null)?.content;
  return Array.isArray(content) && content.some((c) => typeof (c as { audio?: unknown } | null)?.audio === 'string');
}

/** The only events that may be larger than MAX_MESSAGE_BYTES (what in them may be large is checked once read). */
const LARGE_EVENTS: ReadonlySet<string> = new Set(['input_audio_buffer.append', 'conversation.item.create']);

interface Problem {
  code: string;
  message: string;
  param?: string;
  type?: string;
}
const problem = (code: string, message: string, param?: string, type?: string): Problem => ({ code, message, ...(param ? { param } : {}), ...(type ? { type } : {}) });
const isProblem = (err: unknown): err is Problem => typeof err === 'object' && err !== null && 'code' in err && 'message' in err && !(err instanceof Error);

function wireResponse(r: ResponseInfo, conversationId: string, voice: string) {
  const usage = r.usage ?? { inputTokens: 0, outputTokens: 0 };
  return {
    object: 'realtime.response',
    id: r.id,
    status: r.status,
    status_details:
      r.status === 'cancelled' ? { type: 'cancelled', reason: r.reason ?? 'client_cancelled' } : r.status === 'failed' ? { type: 'failed', error: { type: 'server_error', code: r.reason ?? 'server_error' } } : null,
    output: r.output.map(wireItem),
    conversation_id: r.inConversation ? conversationId : null,
    output_modalities: ['audio'],
    max_output_tokens: 'inf',
    audio: { output: { format: { type: 'audio/pcm', rate: 24000 }, voice } },
    usage: {
      total_tokens: usage.inputTokens + usage.outputTokens,
      input_tokens: usage.inputTokens,
      output_tokens: usage.outputTokens,
      input_token_details: { text_tokens: usage.inputTokens, audio_tokens: 0, cached_tokens: 0 },
      output_token_details: { text_tokens: usage.outputTokens, audio_tokens: 0 },
    },
    metadata: r.metadata ?? null,
  };
}

export function openAiProtocol(defaults: SessionDefaults) {
  return (control: CallControl, send: (message: object) => void): ClientProtocol => {
    const eventPrefix = `event_${randomId('', 6)}`;
    let seq = 0;
    const emit = (event: Record<string, unknown>) => send({ ...event, event_id: `${eventPrefix}${(seq++).toString(36)}` });
    const fail = (problem: { code: string; message: string; param?: string | null; type?: string }, eventId?: string) =>
      emit({
        type: 'error',
        error: { type: problem.type ?? 'invalid_request_error', code: problem.code, message: problem.message, param: problem.param ?? null, event_id: eventId ?? null },
      });
    const sessionObject = () => openAiSessionObject(control.session(), control.id);

    type Outcome = ParamProblem | { code: string; message: string; param?: string } | void;
    const handlers: { [T in ClientEventType]: (e: ClientEvent<T>) => Outcome | Promise<Outcome> } = {
      'session.update': (e) => {
        const result = applyOpenAiSession(control.session(), e.session, defaults.turnDetection);
        if (!result.ok) return result.problem;
        const applied = control.updateSession(result.session);
        if (!applied.ok) return { code: applied.code, message: applied.message, param: 'session.model' };
        emit({ type: 'session.updated', session: sessionObject() });
      },
      'input_audio_buffer.append': (e) => {
        if (control.appendInputAudio(e.audio)) return;
        return { code: 'unsupported_over_webrtc', message: 'Over WebRTC the caller\'s audio travels on the audio track; input_audio_buffer.append is not used.' };
      },
      'input_audio_buffer.commit': () => {
        const r = control.commitInput();
        if (!r.ok) return r;
      },
      'input_audio_buffer.clear': () => control.clearInput(),
      'conversation.item.create': (e) => {
        const add = (item: Item): Outcome => {
          const placed = control.addItem(item, e.previous_item_id, audioOf(e.item));
          if (!placed.ok) return { code: 'invalid_value', message: placed.message, param: 'previous_item_id' };
        };
        // Pictures are decoded first; the client's later events wait (see receive).
        if (hasImages(e.item)) return itemWithImages(e.item, control).then(add, (err: unknown) => (isProblem(err) ? err : Promise.reject(err)));
        return add(itemFromWire(e.item));
      },
      'conversation.item.retrieve': (e) => {
        const item = control.conversation.get(e.item_id);
        if (!item) return { code: 'item_not_found', message: `No item with id '${e.item_id}'.`, param: 'item_id' };
        emit({ type: 'conversation.item.retrieved', item: wireItem(item) });
      },
      'conversation.item.truncate': (e) => {
        const r = control.truncateItem(e.item_id, e.audio_end_ms);
        if (!r.ok) return { code: 'invalid_value', message: r.message, param: 'item_id' };
      },
      'conversation.item.delete': (e) => {
        if (!control.deleteItem(e.item_id)) return { code: 'item_not_found', message: `No item with id '${e.item_id}'.`, param: 'item_id' };
      },
      'response.create': (e) => {
        const r = e.response ?? {};
        const request: ResponseRequest = {
          ...(r.instructions !== undefined ? { instructions: r.instructions } : {}),
          ...(r.tools ? { tools: r.tools.filter((t) => t.type === 'function' && t.name).map((t) => ({ name: t.name!, ...(t.description ? { description: t.description } : {}), ...(t.parameters ? { parameters: t.parameters } : {}) })) } : {}),
          ...(r.tool_choice !== undefined ? { toolChoice: toolChoiceOf(r.tool_choice) } : {}),
          ...(r.output_modalities ? { outputModalities: r.output_modalities } : {}),
          ...(r.max_output_tokens !== undefined ? { maxOutputTokens: r.max_output_tokens === 'inf' ? null : r.max_output_tokens } : {}),
          ...(r.audio?.output?.voice ? { voice: r.audio.output.voice } : {}),
          ...(r.conversation ? { conversation: r.conversation } : {}),
          ...(r.metadata !== undefined ? { metadata: r.metadata } : {}),
        };
        if (r.input) {
          const input: Item[] = [];
          if (r.input.some(hasImages)) return { code: 'invalid_value', message: 'response.input items may not carry input_image; add the item with conversation.item.create and reference it.', param: 'response.input' };
          for (const w of r.input) {
            if (w.type === 'item_reference') {
              const ref = control.conversation.get(w.id);
              if (!ref) return { code: 'item_not_found', message: `No item with id '${w.id}'.`, param: 'response.input' };
              input.push(ref);
            } else input.push(itemFromWire(w));
          }
          request.input = input;
        }
        const refused = control.createResponse(request);
        if (!refused.ok) return refused;
      },
      'response.cancel': () => {
        if (!control.cancelResponse()) return { code: 'response_cancel_not_active', message: 'There is no response in progress to cancel.' };
      },
      'output_audio_buffer.clear': () => control.clearOutputAudio(),
    };

    /** Client messages that arrived while an image was being decoded, handled after it in order. */
    let waiting: string[] | undefined;
    let waitingBytes = 0;

    /** The reply item the agent's audio belongs to now (audio inside events names it). */
    let speaking: { response_id: string; item_id: string; output_index: number } | null = null;

    function deliver(event: CallEvent): void {
      switch (event.type) {
        case 'output_audio.delta':
          if (speaking) emit({ type: 'response.output_audio.delta', ...speaking, content_index: 0, delta: event.audio });
          return;
        case 'input.speech_started':
          return emit({ type: 'input_audio_buffer.speech_started', item_id: event.itemId, audio_start_ms: event.audioStartMs });
        case 'input.speech_stopped':
          return emit({ type: 'input_audio_buffer.speech_stopped', item_id: event.itemId, audio_end_ms: event.audioEndMs });
        case 'input.committed':
          return emit({ type: 'input_audio_buffer.committed', item_id: event.itemId, previous_item_id: event.previousItemId });
        case 'input.cleared':
          return emit({ type: 'input_audio_buffer.cleared' });
        case 'input.timeout_triggered':
          return emit({ type: 'input_audio_buffer.timeout_triggered', audio_start_ms: event.audioStartMs, audio_end_ms: event.audioEndMs, item_id: newItemId() });
        case 'input.dtmf':
          // Parley's own event (OpenAI's protocol has none for a phone's keys).
          return emit({ type: 'parley.input_audio_buffer.dtmf', digit: event.digit });
        case 'recording.stopped':
          // Parley's own event, as for key presses: the recording ended early, the call goes on.
          return emit({ type: 'parley.recording.stopped', reason: event.reason });
        case 'transcription.delta':
          return emit({ type: 'conversation.item.input_audio_transcription.delta', item_id: event.itemId, content_index: 0, delta: event.delta });
        case 'transcription.completed':
          return emit({ type: 'conversation.item.input_audio_transcription.completed', item_id: event.itemId, content_index: 0, transcript: event.transcript });
        case 'transcription.failed':
          return emit({
            type: 'conversation.item.input_audio_transcription.failed',
            item_id: event.itemId,
            content_index: 0,
            error: { type: 'server_error', code: 'transcription_failed', message: event.message },
          });
        case 'item.added':
          return emit({ type: 'conversation.item.added', item: wireItem(event.item), previous_item_id: event.previousItemId });
        case 'item.done':
          return emit({ type: 'conversation.item.done', item: wireItem(event.item), previous_item_id: event.previousItemId });
        case 'item.deleted':
          return emit({ type: 'conversation.item.deleted', item_id: event.itemId });
        case 'item.truncated':
          return emit({ type: 'conversation.item.truncated', item_id: event.itemId, content_index: event.contentIndex, audio_end_ms: event.audioEndMs });
        case 'response.created':
          return emit({ type: 'response.created', response: wireResponse(event.response, control.id, control.session().voice) });
        case 'response.output_item.added': {
          emit({ type: 'response.output_item.added', response_id: event.responseId, output_index: event.outputIndex, item: wireItem(event.item) });
          if (event.item.type === 'message' && event.item.content[0]?.type === 'output_audio') {
            speaking = { response_id: event.responseId, item_id: event.item.id, output_index: event.outputIndex };
          }
          if (event.item.type === 'message') {
            const part = event.item.content[0]?.type === 'output_audio' ? { type: 'audio', transcript: '' } : { type: 'text', text: '' };
            emit({ type: 'response.content_part.added', response_id: event.responseId, item_id: event.item.id, output_index: event.outputIndex, content_index: 0, part });
          }
          return;
        }
        case 'response.text.delta':
          return emit({
            type: event.audio ? 'response.output_audio_transcript.delta' : 'response.output_text.delta',
            response_id: event.responseId,
            item_id: event.itemId,
            output_index: event.outputIndex,
            content_index: 0,
            delta: event.delta,
          });
        case 'response.text.done':
          return emit({
            type: event.audio ? 'response.output_audio_transcript.done' : 'response.output_text.done',
            response_id: event.responseId,
            item_id: event.itemId,
            output_index: event.outputIndex,
            content_index: 0,
            ...(event.audio ? { transcript: event.text } : { text: event.text }),
          });
        case 'response.audio.done':
          if (speaking?.item_id === event.itemId) speaking = null;
          return emit({ type: 'response.output_audio.done', response_id: event.responseId, item_id: event.itemId, output_index: event.outputIndex, content_index: 0 });
        case 'response.function_call_arguments.delta':
          return emit({ type: 'response.function_call_arguments.delta', response_id: event.responseId, item_id: event.itemId, output_index: event.outputIndex, call_id: event.callId, delta: event.delta });
        case 'response.function_call_arguments.done':
          return emit({
            type: 'response.function_call_arguments.done',
            response_id: event.responseId,
            item_id: event.itemId,
            output_index: event.outputIndex,
            call_id: event.callId,
            name: event.name,
            arguments: event.arguments,
          });
        case 'response.output_item.done': {
          const item = event.item;
          if (item.type === 'message') {
            const c = item.content[0];
            const part = c?.type === 'output_audio' ? { type: 'audio', transcript: c.transcript ?? '' } : { type: 'text', text: c?.type === 'output_text' ? c.text : '' };
            emit({ type: 'response.content_part.done', response_id: event.responseId, item_id: item.id, output_index: event.outputIndex, content_index: 0, part });
          }
          return emit({ type: 'response.output_item.done', response_id: event.responseId, output_index: event.outputIndex, item: wireItem(item) });
        }
        case 'response.done':
          emit({ type: 'response.done', response: wireResponse(event.response, control.id, control.session().voice) });
          // After each response, as OpenAI does: what the client may still ask for.
          if (control.rateLimits) emit({ type: 'rate_limits.updated', rate_limits: control.rateLimits() });
          return;
        case 'mcp.list_tools':
          // A failure says why (a field OpenAI's event does not have; clients ignore it).
          return emit({ type: `mcp_list_tools.${event.phase}`, item_id: event.itemId, ...(event.message ? { error: { type: 'mcp_error', message: event.message } } : {}) });
        case 'response.mcp_call_arguments.delta':
          return emit({ type: event.type, response_id: event.responseId, item_id: event.itemId, output_index: event.outputIndex, delta: event.delta });
        case 'response.mcp_call_arguments.done':
          return emit({ type: event.type, response_id: event.responseId, item_id: event.itemId, output_index: event.outputIndex, arguments: event.arguments });
        case 'response.mcp_call':
          return emit({ type: `response.mcp_call.${event.phase}`, item_id: event.itemId, output_index: event.outputIndex });
        case 'response.audio.started':
          // Parley's own: where the time to the first audio went (clients ignore unknown types).
          return emit({ type: 'parley.response.timings', response_id: event.responseId, item_id: event.itemId, timings: event.timings });
        // The server's playback buffer exists only where the server plays the audio (WebRTC); over a
        // WebSocket the client holds it.
        case 'output_audio.started':
          if (!control.audioInEvents) emit({ type: 'output_audio_buffer.started', response_id: event.responseId });
          return;
        case 'output_audio.stopped':
          if (!control.audioInEvents) emit({ type: 'output_audio_buffer.stopped', response_id: event.responseId });
          return;
        case 'output_audio.cleared':
          if (!control.audioInEvents) emit({ type: 'output_audio_buffer.cleared', response_id: event.responseId });
          return;
        case 'error':
          return fail({ type: event.kind, code: event.code, message: event.message, param: event.param ?? null }, event.eventId);
        case 'stage.failed':
          return fail({ type: 'server_error', code: event.code, message: event.message });
        case 'response.interrupted':
          return;
        default:
          return noEventLeft(event);
      }
    }

    return {
      opened() {
        emit({ type: 'session.created', session: sessionObject() });
        emit({ type: 'conversation.created', conversation: { id: control.id, object: 'realtime.conversation' } });
      },

      receive(text) {
        // A picture being decoded holds the events after it, so they are handled in the order sent.
        if (waiting) {
          if (waiting.length >= MAX_WAITING_EVENTS || waitingBytes + text.length > MAX_WAITING_BYTES) {
            return fail({ code: 'server_busy', type: 'server_error', message: 'Too many events arrived while an image was being decoded; this one was dropped.' });
          }
          waiting.push(text);
          waitingBytes += text.length;
          return;
        }
        const pending = handle(text);
        if (!(pending instanceof Promise)) return;
        waiting = [];
        const drain = (): void => {
          while (waiting && waiting.length) {
            const text = waiting.shift()!;
            waitingBytes -= text.length;
            const next = handle(text);
            if (next instanceof Promise) return void next.finally(drain);
          }
          waiting = undefined;
        };
        void pending.finally(drain);
      },

      deliver,

      ended(reason) {
        emit({ type: 'parley.session.ended', reason });
      },
    };

    /** Handles one client message; a promise when it goes on (an image being decoded). */
    function handle(text: string): Promise<void> | void {
        // Audio in events (a WebSocket): an append may be as large as OpenAI takes; any other event as
        // over a data channel, where an item with an image may be larger than other events.
        // A larger one of another type is refused before it is parsed.
        const reading = readClientMessage(text, control.audioInEvents ? MAX_AUDIO_MESSAGE_BYTES : DATA_CHANNEL_IMAGE_MESSAGE_BYTES, LARGE_EVENTS);
        if (!reading.ok) return fail({ code: reading.code, message: reading.message }, reading.eventId);
        const m = reading.message;
        const eventId = typeof m.event_id === 'string' ? m.event_id.slice(0, 128) : undefined;
        const type = m.type;
        if (typeof type !== 'string') return fail({ code: 'missing_required_parameter', message: "Missing required parameter: 'type'.", param: 'type' }, eventId);
        if (!(type in CLIENT_EVENTS)) return fail({ code: 'invalid_value', message: `Invalid value: '${type.slice(0, 64)}'. Supported values are: ${Object.keys(CLIENT_EVENTS).join(', ')}.`, param: 'type' }, eventId);
        const kind = type as ClientEventType;
        // On a WebSocket an item's audio may be as large as an append; on a data channel only an image makes one large.
        const mayBeLarge = kind === 'input_audio_buffer.append' || (kind === 'conversation.item.create' && (carriesImage(m.item) || (control.audioInEvents && carriesAudio(m.item))));
        if (!mayBeLarge && Buffer.byteLength(text) > MAX_MESSAGE_BYTES) {
          return fail({ code: 'message_too_large', message: `Only input_audio_buffer.append and conversation.item.create may be larger than ${MAX_MESSAGE_BYTES} bytes.` }, eventId);
        }
        const validate = validators[kind];
        if (!validate(m)) return fail(paramProblem(validate.errors, ''), eventId);
        const failed = (err: unknown) => {
          control.logFailure(err as Error);
          fail({ type: 'server_error', code: 'server_error', message: 'The event could not be handled.' }, eventId);
        };
        try {
          const outcome = (handlers[kind] as (e: unknown) => ReturnType<(typeof handlers)[ClientEventType]>)(m);
          if (outcome instanceof Promise) {
            return outcome.then((problem) => {
              if (problem) fail(problem, eventId);
            }, failed);
          }
          if (outcome) fail(outcome, eventId);
        } catch (err) {
          failed(err);
        }
    }
  };
}
