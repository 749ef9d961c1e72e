// The narrow interface between a call and whatever talks on the server side.
// Audio is 48 kHz mono signed 16-bit PCM in 20 ms frames (960 samples) both ways (media/audio/format.ts).
import type { AudioOut } from '../media/audio/format.js';
import type { VideoFrameInfo } from '../media/videoReceiver.js';
import type { SessionParams } from '../session/params.js';

/** Events an agent sends to the client (serialised as JSON on the data channel, `type` field). */
export type AgentEvent = { type: string } & Record<string, unknown>;

export interface ConversationTurn {
  role: 'user' | 'assistant';
  text: string;
}

export interface AgentContext {
  conversationId: string;
  params: SessionParams;
  audio: AudioOut;
  emit(event: AgentEvent): void;
  /** Earlier turns (resumed conversation), oldest first. */
  history: ConversationTurn[];
  /** Persists a turn when the session keeps history. */
  recordTurn(turn: ConversationTurn): void;
}

export interface Agent {
  /** One 20 ms frame of the caller's decoded audio. */
  onAudio(frame: Int16Array): void;
  /** A typed user message (data channel), answered like a spoken turn. */
  onUserText(text: string): void;
  /** A video frame from the caller's camera (only while `video` is in modalities). */
  onVideoFrame?(frame: VideoFrameInfo): void;
  /** Params changed by `session.update`. */
  onParamsUpdate(params: SessionParams): void;
  /** `response.cancel`: stop the current reply. */
  cancel(): void;
  close(): void;
}

export interface AgentFactory {
  create(ctx: AgentContext): Agent;
}
