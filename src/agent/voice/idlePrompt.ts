// The idle prompt (turn_detection.idle_timeout_ms): silence after the agent spoke prompts a reply,
// announced as input.timeout_triggered with the span of the caller's audio it waited through.

export interface IdlePromptOptions {
  /** The session's idle timeout now (none or 0: no prompt). */
  idleMs(): number | null | undefined;
  /** Milliseconds of the caller's audio so far. */
  inputMs(): number;
  /** Nothing is under way (no caller's turn, no reply): the prompt may fire. */
  quiet(): boolean;
  /** The silence lasted: emit input.timeout_triggered for [fromMs, toMs] and start a reply. */
  prompt(fromMs: number, toMs: number): void;
}

export class IdlePrompt {
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly options: IdlePromptOptions) {}

  /** The agent finished speaking: the silence from now on is counted. */
  arm(): void {
    const idleMs = this.options.idleMs();
    if (!idleMs || this.closed) return;
    clearTimeout(this.timer);
    const from = this.options.inputMs();
    this.timer = setTimeout(() => {
      if (this.closed || !this.options.quiet()) return;
      this.options.prompt(from, this.options.inputMs());
    }, idleMs);
  }

  /** The caller spoke or a reply started: no prompt. */
  cancel(): void {
    clearTimeout(this.timer);
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
  }
}
