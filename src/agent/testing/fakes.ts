// Fakes for the agent's unit tests: an audio out whose playback the test advances, a reply model and
// a speaker that produce what the test says, and a context that records events and turns.
import type { AudioOut } from '../../media/audio/format.js';
import { Conversation } from '../../session/conversation.js';
import type { CallEvent } from '../../session/events.js';
import { defaultSession, type Session } from '../../session/session.js';
import type { ReplyChunk, ReplyModel, ReplyRequest } from '../llm/types.js';
import type { SpokenChunk } from '../tts/types.js';
import type { AgentContext, ConversationTurn } from '../types.js';

/** Audio out whose queue the test plays with `play(ms)`. */
export class FakeAudioOut implements AudioOut {
  queuedMs = 0;
  writtenMs = 0;
  private readonly drained = new Set<() => void>();
  write(pcm: Int16Array): void {
    this.queuedMs += pcm.length / 48;
    this.writtenMs += pcm.length / 48;
  }
  clear(): number {
    const dropped = this.queuedMs;
    this.queuedMs = 0;
    return dropped;
  }
  onDrained(cb: () => void): () => void {
    this.drained.add(cb);
    return () => this.drained.delete(cb);
  }
  /** Sends `ms` of the queue; the drain callbacks run when it runs dry. */
  play(ms = Infinity): void {
    const had = this.queuedMs > 0;
    this.queuedMs = Math.max(0, this.queuedMs - ms);
    if (had && this.queuedMs === 0) for (const cb of this.drained) cb();
  }
}

/** A model that yields the given chunks, each after the test releases it (or at once). */
export function scriptedModel(chunks: ReplyChunk[], gate?: () => Promise<void>): ReplyModel & { requests: ReplyRequest[] } {
  const requests: ReplyRequest[] = [];
  return {
    name: 'scripted',
    requests,
    async *reply(req) {
      requests.push(req);
      for (const c of chunks) {
        if (gate) await gate();
        if (req.signal.aborted) return;
        yield c;
      }
    },
  };
}

/** A speaker that speaks each delta as one clause of `msPerClause` of silence-free audio. */
export function fakeSpeak(msPerClause = 1000) {
  return async function* (text: AsyncIterable<string>, _voice: string, signal: AbortSignal): AsyncIterable<SpokenChunk> {
    for await (const delta of text) {
      if (signal.aborted) return;
      yield { text: delta, pcm: new Int16Array(msPerClause * 48).fill(1000) };
    }
  };
}

export function fakeContext(session: Partial<Session> = {}) {
  const events: CallEvent[] = [];
  const turns: ConversationTurn[] = [];
  const audio = new FakeAudioOut();
  const conversation = new Conversation();
  const current: Session = {
    ...defaultSession({ turnDetection: { type: 'server_vad', threshold: 0.5, prefixPaddingMs: 300, silenceMs: 500, idleTimeoutMs: null, createResponse: true, interruptResponse: true } }),
    ...session,
  };
  const ctx: AgentContext = {
    conversationId: 'conv_test',
    session: () => current,
    audio,
    conversation,
    emit: (e) => events.push(e),
    recordTurn: (t) => turns.push(t),
  };
  return { ctx, events, turns, audio, conversation, session: current, types: () => events.map((e) => e.type) };
}

/** Resolves once `check()` holds, letting pending promises run in between. */
export async function settle(check: () => boolean, what: string, turns = 1000): Promise<void> {
  for (let i = 0; i < turns; i++) {
    if (check()) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`never: ${what}`);
}
