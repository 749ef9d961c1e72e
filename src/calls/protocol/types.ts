// The seam between a call and the wire format its client speaks on the data channel. A protocol
// reads the client's messages into commands on the call (CallControl) and writes the call's events
// (CallEvent) as the messages its clients read. The call knows nothing of either format.
import type { StillImage } from '../../media/stillImage.js';
import type { Refusal, ResponseRequest } from '../../agent/types.js';
import type { Conversation, Item, PlaceResult } from '../../session/conversation.js';
import type { CallEvent } from '../../session/events.js';
import type { Session } from '../../session/session.js';

/** What a protocol may do to its call. */
export interface CallControl {
  readonly id: string;
  readonly conversation: Conversation;
  session(): Session;
  /** Applies a new session (the agent follows; the record is updated); refused for a model the call's key may not use. */
  updateSession(next: Session): Refusal;
  /**
   * A client's image as the picture an item carries (decoded, scaled, JPEG); rejects with a message
   * for the client when it is not an image, the node is too busy, or the call's model takes none.
   */
  decodeImage(bytes: Buffer): Promise<StillImage>;
  /**
   * Adds a client item (typed text, a function call's output…); emits item.added and item.done.
   * `audio`: a user item's audio (base64, the session's input format), transcribed into the item.
   */
  addItem(item: Item, after?: string | null, audio?: string): PlaceResult;
  deleteItem(id: string): boolean;
  truncateItem(id: string, audioEndMs: number): { ok: true } | { ok: false; message: string };
  createResponse(request?: ResponseRequest): Refusal;
  cancelResponse(): boolean;
  clearOutputAudio(): void;
  /** The client's audio inside an event (base64); false when the call's wire carries audio on a media track. */
  appendInputAudio(audio: string): boolean;
  /** The call's audio travels inside events (a WebSocket), not on a media track. */
  readonly audioInEvents: boolean;
  commitInput(): Refusal;
  clearInput(): void;
  /** The call's own rate limits now (OpenAI's rate_limits.updated): the replies it may still ask for. */
  rateLimits?(): { name: string; limit: number; remaining: number; reset_seconds: number }[];
  /** The client hangs up. */
  end(reason: 'session_end'): void;
  /** Something went wrong handling a client message (logged server-side; never sent as is). */
  logFailure(err: Error): void;
}

export interface ClientProtocol {
  /** The channel is open: greet the client (session.created, …). */
  opened(): void;
  /** A message from the client. */
  receive(text: string): void;
  /** An event of the call, to send in this protocol's words or leave out. */
  deliver(event: CallEvent): void;
  /** The call ended (its reason, e.g. idle_timeout): the protocol's goodbye, if it has one. */
  ended(reason: string): void;
}

/**
 * `openai-beta`: OpenAI's protocol in its beta dialect (openaiBeta.ts); `openai-azure`: that dialect
 * with only the events of Azure's realtime preview.
 */
export type ProtocolName = 'orga' | 'openai' | 'openai-beta' | 'openai-azure';

export type ProtocolFactory = (control: CallControl, send: (message: object) => void) => ClientProtocol;
