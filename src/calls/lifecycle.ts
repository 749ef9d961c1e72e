// A call's life: connecting → active → ended | failed, its timers (connect timeout, idle timeout,
// maximum duration, the grace an interrupted connection gets to come back), and the end, which
// happens exactly once whatever asks for it.
export type CallState = 'connecting' | 'active' | 'ended' | 'failed';

export interface CallTimeouts {
  connectTimeoutMs: number;
  idleTimeoutMs: number;
  maxDurationMs: number;
  /** How long an active call whose transport is interrupted (an ICE blip) waits for it to come back. */
  reconnectGraceMs: number;
}

export class CallLifecycle {
  state: CallState = 'connecting';
  endReason: string | undefined;
  private connectTimer: NodeJS.Timeout | undefined;
  private durationTimer: NodeJS.Timeout | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private graceTimer: NodeJS.Timeout | undefined;
  private lastActivity = performance.now();

  constructor(
    private readonly timeouts: CallTimeouts,
    /** Called once, with the final state and reason, when the call must end. */
    private readonly onEnd: (state: 'ended' | 'failed', reason: string) => void,
  ) {
    this.connectTimer = setTimeout(() => this.end('failed', 'connect_timeout'), timeouts.connectTimeoutMs);
  }

  get ended(): boolean {
    return this.state === 'ended' || this.state === 'failed';
  }

  /** ICE and DTLS are up: the call is active. Returns false if it was not connecting. */
  connected(): boolean {
    if (this.state !== 'connecting') return false;
    this.state = 'active';
    clearTimeout(this.connectTimer);
    this.activity();
    this.durationTimer = setTimeout(() => this.end('ended', 'max_duration'), this.timeouts.maxDurationMs);
    this.idleTimer = setInterval(() => {
      if (performance.now() - this.lastActivity > this.timeouts.idleTimeoutMs) this.end('ended', 'idle_timeout');
    }, Math.min(1000, this.timeouts.idleTimeoutMs));
    return true;
  }

  /**
   * The transport lost the caller for now: an active call waits `reconnectGraceMs` for resumed()
   * before it ends (connection_lost); a call still connecting keeps its connect timeout.
   */
  interrupted(): void {
    if (this.state !== 'active' || this.graceTimer) return;
    this.graceTimer = setTimeout(() => this.end('ended', 'connection_lost'), this.timeouts.reconnectGraceMs);
  }

  /** The transport is back (or connected again while active): true when the call was already active. */
  resumed(): boolean {
    if (this.state !== 'active') return false;
    clearTimeout(this.graceTimer);
    this.graceTimer = undefined;
    return true;
  }

  /** The client did something (audio, a message): the idle timeout starts again. */
  activity(): void {
    this.lastActivity = performance.now();
  }

  /** The peer went away or failed: before connecting that is a failure, after it an end. */
  lost(reason: string): void {
    this.end(this.state === 'connecting' ? 'failed' : 'ended', reason);
  }

  /** Ends the call once; a call that never connected has failed whatever the reason. */
  end(state: 'ended' | 'failed', reason: string): void {
    if (this.ended) return;
    this.state = this.state === 'connecting' ? 'failed' : state;
    this.endReason = reason;
    clearTimeout(this.connectTimer);
    clearTimeout(this.durationTimer);
    clearInterval(this.idleTimer);
    clearTimeout(this.graceTimer);
    this.onEnd(this.state, reason);
  }
}
