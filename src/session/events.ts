// What happens in a call, in Parley's own terms: the agent and the call emit these; each wire
// protocol (Orga, OpenAI) turns them into the events its clients read, or leaves them out.
import type { Item } from './conversation.js';

export type ResponseStatus = 'in_progress' | 'completed' | 'cancelled' | 'incomplete' | 'failed';

export interface ResponseInfo {
  id: string;
  status: ResponseStatus;
  /** Why it was cancelled or is incomplete: `turn_detected` (barge-in), `client_cancelled`, `max_output_tokens`… */
  reason?: string;
  output: Item[];
  usage?: { inputTokens: number; outputTokens: number };
  /** Whether its output joins the conversation (false for out-of-band responses). */
  inConversation: boolean;
  /** The client's metadata for the response (response.create), echoed back. */
  metadata?: Record<string, unknown> | null;
}

/** Where the time to a reply's first audio went (ms), per stage. */
export type StageTimings = Partial<
  Record<'end_of_turn_wait_ms' | 'transcription_ms' | 'first_token_ms' | 'synthesis_ms' | 'voice_to_voice_ms', number>
>;

export type ErrorKind = 'invalid_request_error' | 'server_error';

/** Where in the call something failed on the server. */
export type FailedStage = 'vad' | 'noise_reduction' | 'stt' | 'llm' | 'tts' | 'media' | 'vision';

/** Why a call's recording stopped before the call ended: its size cap, the disk's free space, or an error. */
export type RecordingStopReason = 'max_size' | 'low_disk' | 'failed';

export type CallEvent =
  // The caller's audio turn.
  | { type: 'input.speech_started'; itemId: string; audioStartMs: number }
  | { type: 'input.speech_stopped'; itemId: string; audioEndMs: number }
  | { type: 'input.committed'; itemId: string; previousItemId: string | null }
  | { type: 'input.cleared' }
  | { type: 'input.timeout_triggered'; audioStartMs: number; audioEndMs: number }
  /** A key the caller pressed (RFC 4733 telephone-event on a phone call): 0-9, *, #, A-D. */
  | { type: 'input.dtmf'; digit: string }
  | { type: 'transcription.delta'; itemId: string; delta: string }
  | { type: 'transcription.completed'; itemId: string; transcript: string }
  | { type: 'transcription.failed'; itemId: string; message: string }
  // The conversation.
  | { type: 'item.added'; item: Item; previousItemId: string | null }
  | { type: 'item.done'; item: Item; previousItemId: string | null }
  | { type: 'item.deleted'; itemId: string }
  | { type: 'item.truncated'; itemId: string; contentIndex: number; audioEndMs: number }
  // A reply.
  | { type: 'response.created'; response: ResponseInfo }
  | { type: 'response.output_item.added'; responseId: string; outputIndex: number; item: Item }
  /** Reply text as it is generated; `audio`: it is the transcript of spoken output (else text-only output). */
  | { type: 'response.text.delta'; responseId: string; itemId: string; outputIndex: number; audio: boolean; delta: string }
  | { type: 'response.text.done'; responseId: string; itemId: string; outputIndex: number; audio: boolean; text: string }
  | { type: 'response.function_call_arguments.delta'; responseId: string; itemId: string; outputIndex: number; callId: string; delta: string }
  | { type: 'response.function_call_arguments.done'; responseId: string; itemId: string; outputIndex: number; callId: string; name: string; arguments: string }
  | { type: 'response.audio.started'; responseId: string; itemId: string; timings: StageTimings }
  // MCP tools: listing a server's tools, and a call of one during a response.
  | { type: 'mcp.list_tools'; phase: 'in_progress' | 'completed' | 'failed'; itemId: string; message?: string }
  | { type: 'response.mcp_call_arguments.delta'; responseId: string; itemId: string; outputIndex: number; delta: string }
  | { type: 'response.mcp_call_arguments.done'; responseId: string; itemId: string; outputIndex: number; arguments: string }
  | { type: 'response.mcp_call'; phase: 'in_progress' | 'completed' | 'failed'; responseId: string; itemId: string; outputIndex: number }
  /** All of the reply's audio has been produced (not yet all played). */
  | { type: 'response.audio.done'; responseId: string; itemId: string; outputIndex: number }
  | { type: 'response.output_item.done'; responseId: string; outputIndex: number; item: Item }
  | { type: 'response.done'; response: ResponseInfo }
  /** The caller spoke over a reply: it was stopped and its unsent audio dropped. */
  | { type: 'response.interrupted'; responseId: string; droppedAudioMs: number }
  // The agent's voice on the wire.
  | { type: 'output_audio.started'; responseId: string | null }
  | { type: 'output_audio.stopped'; responseId: string | null }
  | { type: 'output_audio.cleared'; responseId: string | null }
  // The agent's audio inside an event (base64 in the session's encoding), on a wire with no media track.
  | { type: 'output_audio.delta'; audio: string }
  // A stage of the call failed on the server, told once: the client's error event, the logs and the
  // metrics all listen to this. `recoverable`: the call goes on (a turn or a reply is lost), or not.
  // `message` is the client's; `cause` stays on the server (logs).
  | { type: 'stage.failed'; stage: FailedStage; code: string; message: string; recoverable: boolean; cause?: Error }
  // The call's recording stopped early; the call goes on (what was written stays a valid file, but after an error).
  | { type: 'recording.stopped'; reason: RecordingStopReason }
  // Something failed or was refused. `eventId`: the client event that caused it.
  | { type: 'error'; kind: ErrorKind; code: string; message: string; param?: string | null; eventId?: string; detail?: unknown };

/**
 * The `default` of a protocol's switch over a CallEvent's type: it type-checks only while every
 * event has a case there, so an event added to CallEvent and forgotten by a protocol fails `tsc`.
 * Nothing reaches it at run time.
 */
export function noEventLeft(event: never): void {
  void event;
}
