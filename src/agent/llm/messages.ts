// Small readings of a conversation that the built-in models share.
import { hasCameraPicture, itemImages, itemText, type Item } from '../../session/conversation.js';
import type { ChatImage, ChatMessage } from './types.js';

/** The pictures of the last user message (none when it has none). */
export function lastUserImages(messages: ChatMessage[]): ChatImage[] {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === 'user') return m.images ?? [];
  }
  return [];
}

/** The text of the last user message ('' when there is none). */
export function lastUserText(messages: ChatMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === 'user') return m.content;
  }
  return '';
}

/**
 * A conversation's items as chat messages for a reply model: transcripts stand for audio. Of the
 * camera's pictures only the latest goes (the scene now, not one picture per past turn: a request
 * stays the same size however long the call); the pictures clients sent all go.
 */
export function toChatMessages(items: readonly Item[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  const latestCamera = [...items].reverse().find(hasCameraPicture);
  for (const item of items) {
    if (item.type === 'message') {
      const text = itemText(item);
      const images = item.role === 'assistant' ? [] : itemImages(item, item === latestCamera);
      if (!text && !images.length) continue;
      if (item.role === 'assistant') out.push({ role: 'assistant', content: text });
      // A system item is context from the client: the model reads it as the user's side.
      else out.push({ role: 'user', content: text, ...(images.length ? { images } : {}) });
    } else if (item.type === 'function_call') {
      const call = { id: item.callId, name: item.name, arguments: item.arguments };
      const last = out.at(-1);
      // Calls of one reply travel together on the assistant message that made them.
      if (last?.role === 'assistant') last.toolCalls = [...(last.toolCalls ?? []), call];
      else out.push({ role: 'assistant', content: '', toolCalls: [call] });
    } else if (item.type === 'function_call_output') {
      out.push({ role: 'tool', toolCallId: item.callId, content: item.output });
    } else if (item.type === 'mcp_call') {
      // An MCP call and its answer, as a tool call and its result.
      const call = { id: item.id, name: item.name, arguments: item.arguments };
      const last = out.at(-1);
      if (last?.role === 'assistant' && !last.content) last.toolCalls = [...(last.toolCalls ?? []), call];
      else out.push({ role: 'assistant', content: '', toolCalls: [call] });
      out.push({ role: 'tool', toolCallId: item.id, content: item.error ? `The tool failed: ${item.error}` : (item.output ?? '') });
    }
    // Listings and approvals are not the model's to read: what it may call is in its tools.
  }
  return out;
}
