// The Orga clients' protocol on the data channel (`orga-realtime-client-events`): their few events
// exactly as the published SDKs read them, plus Parley's additions in the same style. Client
// messages come as `{event, data}` (the SDKs) or `{type, …}`, and are validated by schema.
import { Type } from '@sinclair/typebox';
import { Ajv } from 'ajv';
import { itemText, newItemId, type Item } from '../../session/conversation.js';
import { noEventLeft, type CallEvent } from '../../session/events.js';
import { readClientMessage } from './message.js';
import { orgaSessionObject, sessionUpdater, type SessionUpdater } from './orgaSession.js';
import type { CallControl, ClientProtocol, ProtocolFactory } from './types.js';

const MAX_TEXT_CHARS = 4096;

const ItemCreate = Type.Object({
  item: Type.Optional(
    Type.Object({
      content: Type.Optional(Type.Array(Type.Object({ type: Type.Optional(Type.String()), text: Type.Optional(Type.String()) }), { maxItems: 16 })),
    }),
  ),
  text: Type.Optional(Type.String()),
});
const validateItemCreate = new Ajv({ strict: false }).compile(ItemCreate);

/** The Orga protocol for a catalogue whose ids and aliases are `models`. */
export function orgaProtocol(models: readonly string[]): ProtocolFactory {
  const applySessionUpdate = sessionUpdater(models);
  return (control, send) => orgaClientProtocol(control, send, applySessionUpdate);
}

function orgaClientProtocol(control: CallControl, send: (message: object) => void, applySessionUpdate: SessionUpdater): ClientProtocol {
  const error = (code: string, message: string, extra: Record<string, unknown> = {}) =>
    send({ type: 'error', error: { type: 'invalid_request_error', code, message, param: null, ...extra } });

  const handlers: Record<string, (m: Record<string, unknown>) => void> = {
    'session.update': (m) => {
      // The SDKs send {event, data}; the {type} style carries `session` (or `data`).
      const data = m.event !== undefined && m.type === undefined ? m.data : (m.session ?? m.data);
      const result = applySessionUpdate(control.session(), data ?? {});
      if (!result.ok) {
        return error('invalid_session_update', result.detail.map((d) => `${d.loc.slice(1).join('.')}: ${d.msg}`).join('; '), { detail: result.detail });
      }
      const applied = control.updateSession(result.session);
      if (!applied.ok) return error(applied.code, applied.message);
      send({ type: 'session.updated', session: orgaSessionObject(control.session(), control.id) });
    },
    'response.cancel': () => {
      control.cancelResponse();
      send({ type: 'response.cancelled' });
    },
    'conversation.item.create': (m) => {
      if (!validateItemCreate(m)) return error('invalid_item', 'conversation.item.create needs item.content[].text (or text): a string.');
      const item = m.item as { content?: { text?: string }[] } | undefined;
      const text = item?.content?.find((c) => typeof c.text === 'string')?.text ?? (m.text as string | undefined);
      if (!text?.trim()) return error('invalid_item', 'conversation.item.create needs item.content[0].text (or text): a non-empty string.');
      if (text.length > MAX_TEXT_CHARS) return error('invalid_item', `Text messages are limited to ${MAX_TEXT_CHARS} characters.`);
      // A typed message is a turn: it replaces a reply in progress and is answered.
      control.clearOutputAudio();
      const user: Item = { id: newItemId(), type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text }] };
      control.addItem(user);
      const refused = control.createResponse();
      if (!refused.ok) error(refused.code, refused.message);
    },
    'session.end': () => control.end('session_end'),
  };

  return {
    opened() {
      send({ type: 'session.created', session: orgaSessionObject(control.session(), control.id) });
      send({ type: 'conversation.created', conversation: { id: control.id, object: 'realtime.conversation' } });
    },

    receive(text) {
      const reading = readClientMessage(text);
      if (!reading.ok) return error(reading.code, reading.message);
      const m = reading.message;
      const kind = typeof m.type === 'string' ? m.type : typeof m.event === 'string' ? m.event : undefined;
      const handle = kind !== undefined ? handlers[kind] : undefined;
      if (!handle) return error('unknown_event', kind ? `Unknown event type "${kind.slice(0, 64)}".` : 'The message has no "type" (or "event") field.');
      try {
        handle(m);
      } catch (err) {
        control.logFailure(err as Error);
        error('server_error', 'The message could not be handled.');
      }
    },

    deliver(event: CallEvent) {
      switch (event.type) {
        case 'input.speech_started':
          return send({ type: 'input_audio_buffer.speech_started' });
        case 'input.speech_stopped':
          return send({ type: 'input_audio_buffer.speech_stopped' });
        case 'transcription.completed':
          if (control.session().transcribeInput) send({ type: 'conversation.item.input_audio_transcription.completed', transcript: event.transcript });
          return;
        case 'response.text.delta':
          return send({ type: 'response.text.delta', delta: event.delta });
        case 'response.audio.started':
          return send({ type: 'response.audio.started', timings: event.timings });
        case 'response.output_item.done': {
          const item = event.item;
          // The SDKs show this text as the assistant's turn: only a reply that was finished.
          if (item.type !== 'message' || item.status !== 'completed') return;
          return send({ type: 'response.output_item.done', text: itemText(item) });
        }
        case 'output_audio.stopped':
          return send({ type: 'response.audio.done' });
        case 'response.interrupted':
          return send({ type: 'response.interrupted', dropped_audio_ms: event.droppedAudioMs });
        case 'recording.stopped':
          return send({ type: 'recording.stopped', reason: event.reason });
        case 'stage.failed':
          return send({ type: 'error', error: { type: 'server_error', code: event.code, message: event.message, param: null } });
        case 'error':
          return send({
            type: 'error',
            error: { type: event.kind, code: event.code, message: event.message, param: event.param ?? null, ...(event.detail !== undefined ? { detail: event.detail } : {}) },
          });
        // Not in Orga's protocol: its clients hear the turn, the reply's text and audio, and errors.
        case 'input.committed':
        case 'input.cleared':
        case 'input.timeout_triggered':
        case 'input.dtmf':
        case 'transcription.delta':
        case 'transcription.failed':
        case 'item.added':
        case 'item.done':
        case 'item.deleted':
        case 'item.truncated':
        case 'response.created':
        case 'response.output_item.added':
        case 'response.text.done':
        case 'response.function_call_arguments.delta':
        case 'response.function_call_arguments.done':
        case 'mcp.list_tools':
        case 'response.mcp_call_arguments.delta':
        case 'response.mcp_call_arguments.done':
        case 'response.mcp_call':
        case 'response.audio.done':
        case 'response.done':
        case 'output_audio.started':
        case 'output_audio.cleared':
        case 'output_audio.delta':
          return;
        default:
          return noEventLeft(event);
      }
    },

    ended(reason) {
      send({ type: 'session.ended', reason });
    },
  };
}
