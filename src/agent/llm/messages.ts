// Small readings of a conversation that the built-in models share.
import type { ChatMessage } from './types.js';

/** The text of the last user message ('' when there is none). */
export function lastUserText(messages: ChatMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === 'user') return m.content;
  }
  return '';
}
