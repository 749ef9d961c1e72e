// The agent's audio as a WebSocket client hears it. The client plays what it is sent as it arrives,
// after what it was sent before, so each piece is taken to play at real-time rate from when it was
// sent (or from the end of the previous piece): what is sent but not yet due to have played is the
// queue, and playback finishes when the timeline reaches its end, or when it is cleared.
import type { PlaybackListener } from '../../media/audio/format.js';
import { PlaybackListeners } from '../../media/audio/playback.js';

export class PlayoutTimeline {
  /** performance.now() when the current playback started; undefined while the client is silent. */
  private startedAt: number | undefined;
  /** When what was sent so far is due to have played. */
  private endsAt = 0;
  private endTimer: NodeJS.Timeout | undefined;
  private readonly playback = new PlaybackListeners();

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** `ms` of audio was handed to the client. */
  sent(ms: number): void {
    const now = this.now();
    if (this.startedAt === undefined) {
      this.startedAt = now;
      this.endsAt = now;
      this.playback.started();
    }
    this.endsAt += ms;
    clearTimeout(this.endTimer);
    this.endTimer = setTimeout(() => this.reachedEnd(), this.endsAt - now);
    // A silent client is no reason to keep the process up.
    this.endTimer.unref();
  }

  /** Milliseconds sent and not yet due to have played. */
  get queuedMs(): number {
    return this.startedAt === undefined ? 0 : Math.max(0, this.endsAt - this.now());
  }

  /** The client was told to stop (barge-in, cancel): playback ends where it is now. */
  stop(): void {
    if (this.startedAt === undefined) return;
    this.end(Math.min(this.now(), this.endsAt), true);
  }

  onPlayback(listener: PlaybackListener): () => void {
    return this.playback.add(listener);
  }

  private reachedEnd(): void {
    if (this.startedAt === undefined) return;
    // A timer may fire a little early; the end is where the audio ends.
    this.end(this.endsAt, false);
  }

  private end(at: number, interrupted: boolean): void {
    const playbackPositionMs = at - this.startedAt!;
    clearTimeout(this.endTimer);
    this.startedAt = undefined;
    this.endsAt = 0;
    this.playback.finished({ playbackPositionMs, interrupted });
  }
}
