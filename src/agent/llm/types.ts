// A reply model: the conversation so far in, the reply out as it is generated (text deltas, tool
// calls), cancellable through the request's signal.
import type { StillImage } from '../../media/stillImage.js';
import type { SpanParent } from '../../observability/tracing.js';
import type { ImageDetail } from '../../session/conversation.js';
import type { ToolChoice, ToolDefinition } from '../../session/tools.js';

export type { ToolChoice, ToolDefinition };

export interface ToolCall {
  /** The call id the client answers with (`call_…`). */
  id: string;
  name: string;
  /** JSON text of the arguments. */
  arguments: string;
}

export type ChatMessage =
  /** `images`: pictures shown with the message (the camera at the end of the turn, a client's input_image). */
  | { role: 'user'; content: string; images?: ChatImage[] }
  | { role: 'assistant'; content: string; toolCalls?: ToolCall[] }
  | { role: 'tool'; toolCallId: string; content: string };


export interface ChatImage {
  image: StillImage;
  detail: ImageDetail;
}

export interface ReplyRequest {
  /** The conversation, oldest first, ending with what is to be answered. */
  messages: ChatMessage[];
  instructions: string | null;
  temperature: number;
  tools: ToolDefinition[];
  toolChoice: ToolChoice;
  /** Upper bound on the reply's length in tokens, when the client set one. */
  maxOutputTokens?: number;
  signal: AbortSignal;
  /** Where the span of a request to a model service goes (the turn's, else the call's). */
  trace?: SpanParent;
}

export type ReplyChunk =
  | { type: 'text'; delta: string }
  /** Part of a tool call: the first part of each call carries its id and name; arguments arrive in pieces. */
  | { type: 'tool_call'; index: number; id?: string; name?: string; argumentsDelta: string }
  | { type: 'usage'; inputTokens: number; outputTokens: number };

export interface ReplyModel {
  readonly name: string;
  reply(req: ReplyRequest): AsyncIterable<ReplyChunk>;
}
