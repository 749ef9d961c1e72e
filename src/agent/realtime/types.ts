// The seam between the bridge (a call's agent: audio, playout, barge-in, the camera, failure) and the
// protocol of one kind of upstream realtime model. OpenAI's Realtime protocol is one module
// (openai.ts); another (Gemini Live) would be another implementation of UpstreamModel.
import type { Item } from '../../session/conversation.js';
import type { CallEvent } from '../../session/events.js';
import type { Session } from '../../session/session.js';
import type { ResponseRequest } from '../types.js';

/** Why an upstream model cannot go on, in words for the client (no key, no URL, no raw body). */
export interface UpstreamFailure {
  code: 'model_unavailable' | 'model_timeout' | 'model_failed';
  message: string;
}

/** Who a command sent upstream was for: an upstream's error about it goes to the client, or only to the log. */
export type CommandOrigin = 'client' | 'bridge';

/**
 * What an upstream says, in Parley's terms: the call's own events (a reply, the caller's turn, the
 * conversation), and what only the bridge hears.
 */
export type UpstreamEvent =
  | CallEvent
  /** The upstream confirmed the session it was configured with: commands may flow. */
  | { type: 'upstream.ready' }
  /** A piece of a reply's audio, as PCM at `rate`. */
  | { type: 'upstream.audio'; responseId: string; itemId: string; pcm: Int16Array; rate: number }
  /** The upstream refused a command: whose it was and which (undefined: not known). */
  | { type: 'upstream.error'; code: string; message: string; origin?: CommandOrigin; command?: string };

export interface UpstreamListener {
  event(event: UpstreamEvent): void;
  /** Said once; the upstream is closed by then. */
  failed(failure: UpstreamFailure): void;
}

/** How the bridge wants the upstream's session, beyond the call's own. */
export interface UpstreamSessionOptions {
  /** The bridge asks for replies itself at the end of each turn (to put the camera's picture first). */
  ownResponses: boolean;
}

/** One call's session with an upstream model, in one protocol. */
export interface UpstreamModel {
  /** The rate the upstream hears at: the caller's audio comes at it. */
  readonly inputSampleRate: number;
  /** Bytes sent and not yet taken by the upstream (one that stops reading). */
  readonly bufferedBytes: number;
  /** Connects, and configures the upstream with `session`; events go to `listener`. */
  open(session: Session, options: UpstreamSessionOptions, listener: UpstreamListener): void;
  /** The session changed (or the options): the upstream follows. */
  configure(session: Session, options: UpstreamSessionOptions): void;
  /** 20 ms of the caller's audio at inputSampleRate. */
  appendAudio(pcm: Int16Array): void;
  commitInput(): void;
  clearInput(): void;
  createResponse(request: ResponseRequest, origin: CommandOrigin): void;
  cancelResponse(): void;
  /** An item joins the upstream's conversation (after `previousItemId`; null: first). */
  addItem(item: Item, previousItemId: string | null | undefined, origin: CommandOrigin, audio?: Int16Array): void;
  deleteItem(itemId: string): void;
  /**
   * The caller heard `audioEndMs` of an assistant item's audio, and no more: the upstream's copy is
   * cut there, and Parley's (already cut) is not changed by what the upstream says of it later.
   */
  truncate(itemId: string, audioEndMs: number): void;
  close(): void;
}
