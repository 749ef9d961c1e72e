// Reading one client message off the data channel, whatever the protocol: bounded in size and
// nesting before any schema looks at it, so no message can exhaust the process.
export const MAX_MESSAGE_BYTES = 64 * 1024;
/**
 * Over a WebSocket, audio travels in messages: OpenAI takes up to 15 MiB in one
 * input_audio_buffer.append, so that much, and room for the event around it, is read there.
 */
export const MAX_AUDIO_MESSAGE_BYTES = 15 * 1024 * 1024 + 4096;
export const MAX_MESSAGE_DEPTH = 32;

export type MessageReading =
  | { ok: true; message: Record<string, unknown> }
  | { ok: false; code: 'message_too_large' | 'invalid_json' | 'invalid_event'; message: string };

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

/** `maxBytes`: the largest message read (MAX_AUDIO_MESSAGE_BYTES where audio travels in messages). */
export function readClientMessage(text: string, maxBytes = MAX_MESSAGE_BYTES): MessageReading {
  if (Buffer.byteLength(text) > maxBytes) {
    return { ok: false, code: 'message_too_large', message: `Messages are limited to ${maxBytes} bytes.` };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, code: 'invalid_json', message: 'The message is not valid JSON.' };
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, code: 'invalid_event', message: 'A message must be a JSON object with a "type" (or "event") field.' };
  }
  if (jsonDepth(value, MAX_MESSAGE_DEPTH) > MAX_MESSAGE_DEPTH) {
    return { ok: false, code: 'invalid_event', message: `Messages may nest at most ${MAX_MESSAGE_DEPTH} levels deep.` };
  }
  return { ok: true, message: value as Record<string, unknown> };
}
