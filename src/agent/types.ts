// The narrow interface between a call and whatever talks on the server side.
// Audio is 48 kHz mono signed 16-bit PCM in 20 ms frames (960 samples) both ways.
import type { SessionParams } from '../calls/sessionParams.js';

export const SAMPLE_RATE = 48_000;
export const FRAME_SAMPLES = 960;

/** Events an agent sends to the client (serialised as JSON on the data channel, `type` field). */
export type AgentEvent = { type: string } & Record<string, unknown>;

/** Where an agent's speech goes: a queue the call drains at 20 ms per frame onto the RTP stream. */
export interface AudioOut {
  /** Queues PCM (any length; split into 20 ms frames). */
  write(pcm: Int16Array): void;
  /** Drops everything queued and not yet sent (barge-in). Returns the milliseconds dropped. */
  clear(): number;
  /** Milliseconds of audio queued and not yet sent. */
  readonly queuedMs: number;
  /** Called once each time the queue runs dry after audio was written. */
  onDrained(cb: () => void): void;
}

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

export interface VideoFrameInfo {
  codec: string;
  /** The frame as received (depacketised payload), for agents that decode it. */
  payload: Buffer;
  timestamp: number;
  keyframe: boolean;
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
