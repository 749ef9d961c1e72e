// An AudioOut whose sender comes later: an outbound phone call's agent is made with the call, before
// the callee answers and names the codec the RTP session sends with. Until then what is written is
// dropped (nobody is there to hear it) and playback listeners wait to be passed on.
import type { AudioOut, PlaybackListener } from './format.js';

export class LateAudioOut implements AudioOut {
  private target: AudioOut | undefined;
  /** Listeners registered before the sender, with their unsubscribe from it once passed on. */
  private readonly waiting = new Map<PlaybackListener, (() => void) | undefined>();

  /** The sender from now on; the listeners registered so far move to it. */
  bind(target: AudioOut): void {
    this.target = target;
    for (const listener of this.waiting.keys()) this.waiting.set(listener, target.onPlayback(listener));
  }

  write(pcm: Int16Array): void {
    this.target?.write(pcm);
  }

  clear(): number {
    return this.target?.clear() ?? 0;
  }

  get queuedMs(): number {
    return this.target?.queuedMs ?? 0;
  }

  sent(): Promise<void> {
    return this.target?.sent?.() ?? Promise.resolve();
  }

  onPlayback(listener: PlaybackListener): () => void {
    if (this.target) return this.target.onPlayback(listener);
    this.waiting.set(listener, undefined);
    return () => {
      this.waiting.get(listener)?.();
      this.waiting.delete(listener);
    };
  }
}
