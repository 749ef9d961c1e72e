// The listeners of one audio out's playback, told in the order they subscribed.
import type { PlaybackFinished, PlaybackListener } from './format.js';

export class PlaybackListeners {
  private readonly listeners = new Set<PlaybackListener>();

  add(listener: PlaybackListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  started(): void {
    for (const l of this.listeners) l.playbackStarted?.();
  }

  finished(finished: PlaybackFinished): void {
    for (const l of this.listeners) l.playbackFinished?.(finished);
  }
}
