// Fakes for the agent's unit tests: an audio out whose playback the test advances, a reply model and
// a speaker that produce what the test says, and a context that records events and turns.
import type { AudioOut, PlaybackListener } from '../../src/media/audio/format.ts';
import { PlaybackListeners } from '../../src/media/audio/playback.ts';
import { Conversation } from '../../src/session/conversation.ts';
import type { CallEvent } from '../../src/session/events.ts';
import { defaultSession, type Session } from '../../src/session/session.ts';
import type { ReplyChunk, ReplyModel, ReplyRequest } from '../../src/agent/llm/types.ts';
import type { SpeakerStream } from '../../src/agent/stages.ts';
import type { SpokenChunk } from '../../src/agent/tts/types.ts';
import type { AgentContext, AgentFactory, ConversationTurn, ModelChooser } from '../../src/agent/types.ts';

/** Audio out whose queue the test plays with `play(ms)`. */
export class FakeAudioOut implements AudioOut {
  queuedMs = 0;
  writtenMs = 0;
  /** Since playbackStarted, the milliseconds played; undefined while silent. */
  private playedMs: number | undefined;
  private readonly playback = new PlaybackListeners();
  write(pcm: Int16Array): void {
    this.queuedMs += pcm.length / 48;
    this.writtenMs += pcm.length / 48;
  }
  clear(): number {
    const dropped = this.queuedMs;
    this.queuedMs = 0;
    this.ended(true);
    return dropped;
  }
  onPlayback(listener: PlaybackListener): () => void {
    return this.playback.add(listener);
  }
  /** Plays `ms` of the queue: playback starts with it, and finishes when the queue runs dry. */
  play(ms = Infinity): void {
    if (this.queuedMs === 0) return;
    if (this.playedMs === undefined) {
      this.playedMs = 0;
      this.playback.started();
    }
    const played = Math.min(ms, this.queuedMs);
    this.playedMs += played;
    this.queuedMs -= played;
    if (this.queuedMs === 0) this.ended(false);
  }
  private ended(interrupted: boolean): void {
    if (this.playedMs === undefined) return;
    const finished = { playbackPositionMs: this.playedMs, interrupted };
    this.playedMs = undefined;
    this.playback.finished(finished);
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

/** A speaker that speaks each pushed delta as one clause of `msPerClause` of audio. */
export function fakeSpeaker(msPerClause = 1000) {
  return (_voice: string, signal: AbortSignal): SpeakerStream => {
    const clauses: string[] = [];
    let ended = false;
    let wake: () => void = () => {};
    return {
      push(delta) {
        clauses.push(delta);
        wake();
      },
      end() {
        ended = true;
        wake();
      },
      async *[Symbol.asyncIterator]() {
        for (;;) {
          if (signal.aborted) return;
          const text = clauses.shift();
          if (text !== undefined) yield { text, pcm: new Int16Array(msPerClause * 48).fill(1000) } satisfies SpokenChunk;
          else if (ended) return;
          else await new Promise<void>((r) => (wake = r));
        }
      },
    };
  };
}

export function fakeContext(session: Partial<Session> = {}) {
  const events: CallEvent[] = [];
  const turns: ConversationTurn[] = [];
  const failures: { code: string; message: string }[] = [];
  const audio = new FakeAudioOut();
  const conversation = new Conversation();
  const current: Session = {
    ...defaultSession({ turnDetection: { type: 'server_vad', threshold: 0.5, prefixPaddingMs: 300, silenceMs: 500, idleTimeoutMs: null, createResponse: true, interruptResponse: true } }),
    ...session,
  };
  const ctx: AgentContext = {
    conversationId: 'conv_test',
    apiKeyId: 'key_test',
    session: () => current,
    audio,
    conversation,
    emit: (e) => events.push(e),
    turnCompleted: (t) => turns.push(t),
    modelFailed: (f) => failures.push(f),
  };
  return { ctx, events, turns, failures, audio, conversation, session: current, types: () => events.map((e) => e.type) };
}

/** Resolves once `check()` holds, letting pending promises run in between. */
export async function settle(check: () => boolean, what: string, turns = 1000): Promise<void> {
  for (let i = 0; i < turns; i++) {
    if (check()) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`never: ${what}`);
}

/** A chooser that runs each model name on the factory `factoryFor` gives, with no fallbacks. */
export function chooserOf(factoryFor: (model: string) => AgentFactory): ModelChooser {
  const choice = (model: string) => ({ id: model, factory: factoryFor(model) });
  return { choose: choice, forced: choice, allows: () => true, fallbackAfter: () => undefined, failed: () => {}, fellBack: () => {} };
}
