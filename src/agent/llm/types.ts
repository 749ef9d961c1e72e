// A reply model: the conversation so far in, the reply's text out as it is generated.
import type { ConversationTurn } from '../types.js';

export interface ReplyRequest {
  /** The caller's latest words. */
  text: string;
  /** Earlier turns, oldest first (without the latest). */
  history: ConversationTurn[];
  instructions: string | null;
  temperature: number;
  signal: AbortSignal;
}

export interface ReplyModel {
  reply(req: ReplyRequest): AsyncIterable<string>;
}
