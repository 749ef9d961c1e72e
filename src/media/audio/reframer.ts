// Cuts PCM arriving in chunks of any length into frames of one fixed length, carrying the rest over
// to the next chunk: Opus packets of 10, 20, 40 or 60 ms in, 20 ms frames out (and the agent's
// speech, written in any length, into the sender's 20 ms frames).

export class Reframer {
  private partial: Int16Array | undefined;
  private partialLength = 0;

  constructor(
    private readonly frameSamples: number,
    private readonly onFrame: (frame: Int16Array) => void,
  ) {}

  /** Samples held back, waiting for the rest of their frame. */
  get pending(): number {
    return this.partialLength;
  }

  /**
   * Adds samples; every frame they complete is passed on at once. A frame that lies whole in `pcm`
   * is a view of it (no copy): the caller must not change `pcm` afterwards.
   */
  push(pcm: Int16Array): void {
    let offset = 0;
    while (offset < pcm.length) {
      if (!this.partialLength && pcm.length - offset >= this.frameSamples) {
        this.onFrame(pcm.subarray(offset, offset + this.frameSamples));
        offset += this.frameSamples;
        continue;
      }
      this.partial ??= new Int16Array(this.frameSamples);
      const n = Math.min(this.frameSamples - this.partialLength, pcm.length - offset);
      this.partial.set(pcm.subarray(offset, offset + n), this.partialLength);
      this.partialLength += n;
      offset += n;
      if (this.partialLength === this.frameSamples) {
        const frame = this.partial;
        this.partial = undefined;
        this.partialLength = 0;
        this.onFrame(frame);
      }
    }
  }

  /** The held-back samples as one frame padded with silence, or undefined if none are held. */
  flush(): Int16Array | undefined {
    if (!this.partialLength) return undefined;
    const frame = this.partial;
    this.partial = undefined;
    this.partialLength = 0;
    return frame;
  }

  /** Forgets the held-back samples. */
  clear(): void {
    this.partial = undefined;
    this.partialLength = 0;
  }
}
