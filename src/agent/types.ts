// The narrow interface between a call and whatever talks on the server side. The caller's audio
// arrives as mono signed 16-bit PCM in 20 ms frames at the rate the agent declares (the transport
// converts at its edge); the agent speaks 48 kHz PCM (media/audio/format.ts). What the agent says
// and hears is kept as items of the call's Conversation, and what happens is told as CallEvents.
import type { AudioOut } from '../media/audio/format.js';
import type { CallTrace } from '../observability/callTrace.js';
import type { StillImage } from '../media/stillImage.js';
import type { VideoFrameInfo } from '../media/videoReceiver.js';
import type { Conversation, Item } from '../session/conversation.js';
import type { CallEvent } from '../session/events.js';
import type { Session } from '../session/session.js';
import type { ToolChoice, ToolDefinition } from '../session/tools.js';

/** A turn as the store keeps it (history and resume). */
export interface ConversationTurn {
  role: 'user' | 'assistant';
  text: string;
  /** The picture the turn showed the model, as a small JPEG thumbnail data URL (the console shows it). */
  image?: string;
}

export interface AgentContext {
  conversationId: string;
  /** The API key the call belongs to: what the node shares among calls (the picture decoder) it shares fairly among keys. */
  apiKeyId: string;
  /** The live session (changes with session.update; read it when needed). */
  session(): Session;
  audio: AudioOut;
  /** The call's conversation: it outlives the agent (a model switch keeps it). */
  conversation: Conversation;
  emit(event: CallEvent): void;
  /** Asks the caller's camera for a key frame (false: no camera on this wire, or not sent). */
  requestKeyframe?(): boolean;
  /** A user or assistant turn is complete (the record keeps it when the session keeps history). */
  turnCompleted(turn: ConversationTurn): void;
  /**
   * The model behind the agent failed (an upstream refused, timed out or dropped): the call tells
   * the client, and its fallback model takes over with the conversation so far, or the call ends.
   * The message is for the client: never an upstream's key or raw body.
   */
  modelFailed(failure: { code: string; message: string }): void;
  /** The call's trace: its turns' spans, and the parent of the upstream requests made for it. */
  trace?: CallTrace;
}

/** A reply the client asks for (`response.create`); every field overrides the session for this reply. */
export interface ResponseRequest {
  instructions?: string | null;
  tools?: ToolDefinition[];
  toolChoice?: ToolChoice;
  outputModalities?: ('audio' | 'text')[];
  maxOutputTokens?: number | null;
  voice?: string;
  /** `none`: an out-of-band reply whose output stays out of the conversation. */
  conversation?: 'auto' | 'none';
  /** Items to answer instead of the conversation (out-of-band replies). */
  input?: Item[];
  metadata?: Record<string, unknown> | null;
}

export type Refusal = { ok: true } | { ok: false; code: string; message: string };

export interface Agent {
  /** The sample rate it hears at (as livekit's streams declare `neededSampleRate`): the call delivers that. */
  readonly inputSampleRate: number;
  /**
   * One 20 ms frame of the caller's decoded audio, at inputSampleRate; `capturedAt`: when its
   * recording ended (performance.now() ms), where the transport knows it is earlier than now.
   */
  onAudio(frame: Int16Array, capturedAt?: number): void;
  /**
   * A client's image (the bytes of its data URL) as the picture a message carries: decoded, scaled and
   * re-encoded as JPEG; rejects (StillImageError) when it is not an image or the node is too busy.
   * Absent: this agent takes no images.
   */
  decodeImage?(bytes: Buffer): Promise<StillImage>;
  /** A video frame from the caller's camera (only while `video` is in modalities). */
  onVideoFrame?(frame: VideoFrameInfo): void;
  /** The session changed (session.update). */
  onSessionUpdate(session: Session): void;
  /** Starts a reply to the conversation as it stands; refused while another is in progress. */
  createResponse(request?: ResponseRequest): Refusal;
  /** Stops the reply in progress (its unsent audio too); false when there was none. */
  cancelResponse(): boolean;
  /** Drops the agent's unsent audio (the client stops playback). */
  clearOutputAudio(): void;
  /** Ends the caller's turn now (no turn detection): its audio becomes a user item. */
  commitInput(): Refusal;
  /** Forgets the caller's audio not yet committed. */
  clearInput(): void;
  /**
   * Transcribes audio a client put inside a user item (conversation.item.create): the item's
   * transcript is set, and a reply asked for meanwhile answers it. 16-bit PCM at inputSampleRate.
   */
  transcribeItem?(itemId: string, pcm: Int16Array): void;
  /** The client added an item to the conversation (an agent that keeps its own copy upstream follows). */
  itemAdded?(item: Item, previousItemId: string | null): void;
  /** The client deleted an item. */
  itemDeleted?(itemId: string): void;
  /** The client truncated an assistant item's audio at audioEndMs. */
  itemTruncated?(itemId: string, audioEndMs: number): void;
  close(): void;
}

export interface AgentFactory {
  create(ctx: AgentContext): Agent;
}

/** A catalogue model and the factory of the agents that run it. */
export interface ModelChoice {
  id: string;
  factory: AgentFactory;
}

/** Picks the agent behind a call from the session's model, and what takes over when it fails. */
export interface ModelChooser {
  /**
   * The model a call asking for `name` runs (an unknown name runs the default): it, or when it is
   * unavailable (its breaker open, or among `exclude`) its first available fallback; undefined when none is.
   */
  choose(name: string, exclude?: ReadonlySet<string>): ModelChoice | undefined;
  /** The model `name` stands for, available or not. */
  forced(name: string): ModelChoice;
  /** Whether the API key may use the model `name` stands for. */
  allows(name: string, apiKeyId: string): boolean;
  /** The first available fallback of `id` (depth first through their own fallbacks), none of `exclude`. */
  fallbackAfter(id: string, exclude: ReadonlySet<string>): ModelChoice | undefined;
  /** A call's model failed with `code` (the breaker counts it). */
  failed(id: string, code: string): void;
  /** A fallback took a call over from `id` (counted). */
  fellBack(id: string, to: string): void;
}
