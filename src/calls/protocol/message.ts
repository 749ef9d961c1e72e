// Reading one client message off the data channel, whatever the protocol: bounded in size and
// nesting before any schema looks at it, so no message can exhaust the process.
import { scanMessage, stringField } from './messageScan.js';
export const MAX_MESSAGE_BYTES = 64 * 1024;
/**
 * Over a WebSocket, audio travels in messages: OpenAI takes up to 15 MiB in one
 * input_audio_buffer.append, so that much, and room for the event around it, is read there.
 */
export const MAX_AUDIO_MESSAGE_BYTES = 15 * 1024 * 1024 + 4096;
export const MAX_MESSAGE_DEPTH = 32;

/** A large message's structure is walked at most this far (values, containers included) before it is refused. */
export const MAX_LARGE_MESSAGE_VALUES = 1024;

export type MessageReading =
  | { ok: true; message: Record<string, unknown> }
  | {
      ok: false;
      code: 'message_too_large' | 'invalid_json' | 'invalid_event';
      message: string;
      /** The message's event_id when it could be read (the error names it). */
      eventId?: string;
    };

/** Nesting depth of a parsed JSON value (iterative: a deep value must not overflow the stack). */
export function jsonDepth(value: unknown, limit = Infinity): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    max = Math.max(max, depth);
    if (max > limit) return max;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1]);
  }
  return max;
}

const NOT_AN_OBJECT = 'A message must be a JSON object with a "type" (or "event") field.';
const TOO_DEEP = `Messages may nest at most ${MAX_MESSAGE_DEPTH} levels deep.`;

/**
 * `maxBytes`: the largest message read (MAX_AUDIO_MESSAGE_BYTES where audio travels in messages);
 * `largeTypes`: the only types a message over MAX_MESSAGE_BYTES may have. Such a message is scanned
 * before anything parses it (messageScan.ts): another type is refused unparsed, an append is read off
 * the scan (its strings only: an append carries nothing nested), any other allowed type parsed only
 * when its structure is small (its size is in its strings).
 */
export function readClientMessage(text: string, maxBytes = MAX_MESSAGE_BYTES, largeTypes: ReadonlySet<string> = new Set()): MessageReading {
  // Characters first: a string's UTF-8 length is at least its length, and counting it is a walk.
  if (text.length > maxBytes || Buffer.byteLength(text) > maxBytes) {
    return { ok: false, code: 'message_too_large', message: `Messages are limited to ${maxBytes} bytes.` };
  }
  if (text.length > MAX_MESSAGE_BYTES) return readLargeMessage(text, largeTypes);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, code: 'invalid_json', message: 'The message is not valid JSON.' };
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return { ok: false, code: 'invalid_event', message: NOT_AN_OBJECT };
  if (jsonDepth(value, MAX_MESSAGE_DEPTH) > MAX_MESSAGE_DEPTH) return { ok: false, code: 'invalid_event', message: TOO_DEEP };
  return { ok: true, message: value as Record<string, unknown> };
}

const APPEND = 'input_audio_buffer.append';

function readLargeMessage(text: string, largeTypes: ReadonlySet<string>): MessageReading {
  const scan = scanMessage(text, { maxValues: MAX_LARGE_MESSAGE_VALUES, maxDepth: MAX_MESSAGE_DEPTH });
  const eventId = stringField(text, scan.fields, 'event_id', 1024)?.slice(0, 128);
  const type = stringField(text, scan.fields, 'type', 128);
  const tooLarge = (): MessageReading => ({
    ok: false,
    code: 'message_too_large',
    message: `Only ${largeTypes.size ? [...largeTypes].join(' and ') : 'audio'} may be larger than ${MAX_MESSAGE_BYTES} bytes${type ? `, not ${type}` : ''}.`,
    ...(eventId !== undefined ? { eventId } : {}),
  });
  // Whatever else is wrong with it, a type that may not be large is told so first.
  if (type !== undefined && !largeTypes.has(type)) return tooLarge();
  if (!scan.ok) {
    switch (scan.problem) {
      case 'not_object':
        return { ok: false, code: 'invalid_event', message: NOT_AN_OBJECT };
      case 'too_deep':
        return { ok: false, code: 'invalid_event', message: TOO_DEEP, ...(eventId !== undefined ? { eventId } : {}) };
      case 'too_many_values':
        return { ok: false, code: 'invalid_event', message: `A message larger than ${MAX_MESSAGE_BYTES} bytes may hold at most ${MAX_LARGE_MESSAGE_VALUES} JSON values (its size is its audio or image).`, ...(eventId !== undefined ? { eventId } : {}) };
      default:
        return { ok: false, code: 'invalid_json', message: 'The message is not valid JSON.', ...(eventId !== undefined ? { eventId } : {}) };
    }
  }
  if (type === undefined) return tooLarge();
  if (type === APPEND) {
    // Nothing nested: its fields are strings and literals, read off the scan.
    const message: Record<string, unknown> = {};
    for (const [key, v] of scan.fields) {
      if (v.kind === 'nested') return { ok: false, code: 'invalid_event', message: `An ${APPEND} larger than ${MAX_MESSAGE_BYTES} bytes may carry nothing nested (key '${key}').`, ...(eventId !== undefined ? { eventId } : {}) };
      try {
        message[key] = v.kind === 'string' ? stringField(text, scan.fields, key) : JSON.parse(v.text);
      } catch {
        return { ok: false, code: 'invalid_json', message: 'The message is not valid JSON.', ...(eventId !== undefined ? { eventId } : {}) };
      }
    }
    return { ok: true, message };
  }
  // Few values (the scan counted them): parsing costs the length of its strings, nothing more.
  try {
    return { ok: true, message: JSON.parse(text) as Record<string, unknown> };
  } catch {
    return { ok: false, code: 'invalid_json', message: 'The message is not valid JSON.', ...(eventId !== undefined ? { eventId } : {}) };
  }
}
