// Who may open another call on this node. Every call holds a ticket from its offer to its end and
// counts against: the node's limit (MAX_CONCURRENT_CALLS), the calls of its API key
// (MAX_CALLS_PER_KEY) and of its token (MAX_CALLS_PER_TOKEN). Until its peer connects it is
// half-open and counts against a smaller budget as well, node-wide (MAX_HALF_OPEN_CALLS) and per
// key (MAX_HALF_OPEN_CALLS_PER_KEY): offers that never connect cost nothing to post, so they
// must not be able to hold the slots of live calls. A door may have its calls count, while they
// connect, against a budget of its own instead, neither their key's nor the node's: SIP's calls
// ringing, or answered and not yet ACKed (SIP_MAX_HALF_OPEN_CALLS), since INVITEs cost nothing to
// send either, and a flood of them must not lock the key that owns SIP calls out of its WebRTC and
// WebSocket calls. Above its load threshold (LOAD_THRESHOLD) the node takes no call; when that
// threshold is the default one rather than the operator's, a door may still have it take a call no
// other node took (door.ts). A caller's own limits are answered before the node's room or load, the
// key's calls across the nodes included. Counted in this process (each node, each worker); with
// Redis a key's calls are counted across the nodes too (storage/keyCallCounts.ts), before a call is
// admitted: one mechanism for every door, since they all open calls through door.ts.
import type { KeyCallCounts } from '../storage/keyCallCounts.js';

/** Whose call it is. */
export interface Caller {
  apiKeyId: string;
  /** The ephemeral token's id (jti). */
  tokenId: string;
  /** Connecting, the call counts against this budget of its door's own (AdmissionLimits.ownHalfOpen), not the node's and the key's. */
  halfOpenBudget?: string;
}

/** 0 turns a per-caller limit (or the half-open budget) off. */
export interface AdmissionLimits {
  maxCalls: number;
  maxHalfOpen: number;
  maxCallsPerKey: number;
  maxHalfOpenPerKey: number;
  maxCallsPerToken: number;
  /** Half-open budgets of the doors that have their own, by name (SIP's): calls connecting at once, apart from the other budgets (at least 1). */
  ownHalfOpen: Record<string, number>;
  /**
   * The load threshold is the operator's (LOAD_THRESHOLD set): a loaded node refuses a call even
   * when no other node takes it. False: it may take it then (admit's despiteLoad). Default true.
   */
  loadRefusesAlone?: boolean;
}

export interface AdmissionCounts {
  calls: number;
  /** Calls connecting, SIP's included. */
  halfOpen: number;
}

/** Seconds a refused client is told to wait: half-open calls connect or time out within seconds. */
export const RETRY_AFTER_SECONDS = 5;

/** Why the node takes no call now: at a limit of its own, above its load threshold, or shutting down. */
export type NoRoom = 'full' | 'loaded' | 'draining';

/** The node cannot take another call now, from anyone (answered 503 with Retry-After; another node may). */
export class CallCapacityExceeded extends Error {
  constructor(
    message: string,
    readonly why: NoRoom = 'full',
    /** Loaded only: the threshold is the default one, so the node may still take the call when no other node does. */
    readonly mayTakeAlone = false,
  ) {
    super(message);
  }
}

/** A caller's own limit: for parley_rate_limited_total{limit}. */
export type CallLimit = 'calls-key' | 'calls-key-half-open' | 'calls-token-concurrent';

/** This caller is at one of its own limits (answered 429 with Retry-After; never passed to another node). */
export class CallLimitExceeded extends Error {
  constructor(
    message: string,
    /** Which limit. */
    readonly limit: CallLimit,
  ) {
    super(message);
  }
}

export interface AdmitOptions {
  /**
   * No other node took the call: a loaded node takes it all the same, unless its load threshold is
   * the operator's (AdmissionLimits.loadRefusesAlone).
   */
  despiteLoad?: boolean;
}

/** A call's place in the counts: half-open until connected(), given back once by release(). */
export interface AdmissionTicket {
  connected(): void;
  release(): void;
}

/** Counts by subject, forgetting subjects at zero (bounded by the calls there are). */
class Tally {
  readonly counts = new Map<string, number>();
  /** `changed` is told each subject's new count. */
  constructor(private readonly changed: (subject: string, count: number) => void = () => {}) {}
  get(subject: string): number {
    return this.counts.get(subject) ?? 0;
  }
  add(subject: string, delta: 1 | -1): void {
    const n = this.get(subject) + delta;
    if (n > 0) this.counts.set(subject, n);
    else this.counts.delete(subject);
    this.changed(subject, n);
  }
}

export class Admission {
  private calls = 0;
  /** Calls connecting, SIP's apart. */
  private halfOpen = 0;
  /** Calls connecting in each door's own budget. */
  private readonly halfOpenOwn = new Tally();
  private readonly callsPerKey: Tally;
  private readonly halfOpenPerKey = new Tally();
  private readonly callsPerToken = new Tally();

  constructor(
    private readonly limits: AdmissionLimits,
    /** Told the counts after every change (metrics). */
    private readonly observe: (counts: AdmissionCounts) => void = () => {},
    /** Why the node is too loaded to take a call now (src/observability/nodeLoad.ts), or undefined. */
    private readonly overload: () => string | undefined = () => undefined,
    /** Each key's calls on every node (Redis), this node's kept current there; undefined: this node's alone. */
    private readonly acrossNodes?: KeyCallCounts,
  ) {
    this.callsPerKey = new Tally((apiKeyId, calls) => acrossNodes?.set(apiKeyId, calls));
  }

  /** This node's calls by API key (what it publishes for the other nodes' counts). */
  get callsByKey(): ReadonlyMap<string, number> {
    return this.callsPerKey.counts;
  }

  /** Why the node takes no call from anyone now because of its load, or undefined. */
  get loaded(): string | undefined {
    return this.overload();
  }

  get counts(): AdmissionCounts {
    let own = 0;
    for (const n of this.halfOpenOwn.counts.values()) own += n;
    return { calls: this.calls, halfOpen: this.halfOpen + own };
  }

  /** The node takes no call from anyone now (the doors' own budgets aside): at its limit, its half-open budget spent, or loaded. */
  get isFull(): boolean {
    return this.calls >= this.limits.maxCalls || this.halfOpenFull || this.overload() !== undefined;
  }

  /** The node's half-open budget is spent. */
  private get halfOpenFull(): boolean {
    const { maxHalfOpen } = this.limits;
    return maxHalfOpen > 0 && this.halfOpen >= maxHalfOpen;
  }

  /** The limit of its own this caller is at, if any (whether or not the node is full). */
  callerRefusal(caller: Caller): CallLimitExceeded | undefined {
    const { maxCallsPerKey, maxHalfOpenPerKey, maxCallsPerToken } = this.limits;
    if (maxCallsPerToken > 0 && this.callsPerToken.get(caller.tokenId) >= maxCallsPerToken) {
      return new CallLimitExceeded(`This ephemeral token already has ${maxCallsPerToken} calls (its limit); end one first.`, 'calls-token-concurrent');
    }
    if (maxCallsPerKey > 0 && this.callsPerKey.get(caller.apiKeyId) >= maxCallsPerKey) {
      return this.keyAtLimit();
    }
    if (caller.halfOpenBudget === undefined && maxHalfOpenPerKey > 0 && this.halfOpenPerKey.get(caller.apiKeyId) >= maxHalfOpenPerKey) {
      return new CallLimitExceeded(
        `This API key already has ${maxHalfOpenPerKey} calls still connecting on this server (its limit); retry once they connect or time out.`,
        'calls-key-half-open',
      );
    }
    return undefined;
  }

  private keyAtLimit(): CallLimitExceeded {
    const where = this.acrossNodes ? 'across the cluster' : 'on this server';
    return new CallLimitExceeded(`This API key already has ${this.limits.maxCallsPerKey} calls ${where} (its limit); end one first.`, 'calls-key');
  }

  /**
   * admit(), then the key's calls on every node counted (with this one's): past MAX_CALLS_PER_KEY
   * the ticket is given back and CallLimitExceeded thrown. Two nodes admitting the key's last place
   * at once may both refuse, never both admit. A node with no room for the call asks the count too,
   * before it says so: a key at its limit across the nodes hears that (429), not that this node is
   * full or loaded (503). When the count cannot be had (Redis unreachable), this node's own count,
   * already checked, stands.
   */
  async admitAcrossNodes(caller: Caller, opts: AdmitOptions = {}): Promise<AdmissionTicket> {
    let ticket: AdmissionTicket;
    try {
      ticket = this.admit(caller, opts);
    } catch (err) {
      if (err instanceof CallCapacityExceeded && (await this.keyFullAcrossNodes(caller.apiKeyId, 0))) throw this.keyAtLimit();
      throw err;
    }
    // This node's count includes the call now.
    if (!(await this.keyFullAcrossNodes(caller.apiKeyId, 1))) return ticket;
    ticket.release();
    throw this.keyAtLimit();
  }

  /** Whether the key's calls on every node, `more` of them this one's new call, are past its limit (false when unknown). */
  private async keyFullAcrossNodes(apiKeyId: string, more: 0 | 1): Promise<boolean> {
    const { maxCallsPerKey } = this.limits;
    if (!this.acrossNodes || maxCallsPerKey === 0) return false;
    const total = await this.acrossNodes.total(apiKeyId);
    return total !== undefined && total + 1 - more > maxCallsPerKey;
  }

  /** A ticket for a new (half-open) call, counted on this node alone; throws CallLimitExceeded or CallCapacityExceeded. */
  admit(caller: Caller, opts: AdmitOptions = {}): AdmissionTicket {
    // The caller's own limits first: a caller at its limit is told so, not sent to another node.
    const refusal = this.callerRefusal(caller);
    if (refusal) throw refusal;
    if (this.calls >= this.limits.maxCalls) throw new CallCapacityExceeded('This server is at its limit of concurrent calls; retry shortly.');
    const loaded = this.overload();
    const alone = this.limits.loadRefusesAlone === false;
    if (loaded && !(alone && opts.despiteLoad)) throw new CallCapacityExceeded(loaded, 'loaded', alone);
    const budget = caller.halfOpenBudget;
    if (budget !== undefined) {
      const max = this.limits.ownHalfOpen[budget];
      if (max === undefined) throw new Error(`no half-open budget named ${budget}`);
      if (this.halfOpenOwn.get(budget) >= max) throw new CallCapacityExceeded(`This server has too many ${budget.toUpperCase()} calls still connecting; retry shortly.`);
    } else if (this.halfOpenFull) throw new CallCapacityExceeded('This server has too many calls still connecting; retry shortly.');
    const { apiKeyId, tokenId } = caller;
    this.calls++;
    this.callsPerKey.add(apiKeyId, 1);
    this.callsPerToken.add(tokenId, 1);
    if (budget !== undefined) this.halfOpenOwn.add(budget, 1);
    else {
      this.halfOpen++;
      this.halfOpenPerKey.add(apiKeyId, 1);
    }
    this.observe(this.counts);
    let halfOpen = true;
    let held = true;
    const leaveHalfOpen = () => {
      if (!halfOpen) return;
      halfOpen = false;
      if (budget !== undefined) return void this.halfOpenOwn.add(budget, -1);
      this.halfOpen--;
      this.halfOpenPerKey.add(apiKeyId, -1);
    };
    return {
      connected: () => {
        if (!held || !halfOpen) return;
        leaveHalfOpen();
        this.observe(this.counts);
      },
      release: () => {
        if (!held) return;
        held = false;
        leaveHalfOpen();
        this.calls--;
        this.callsPerKey.add(apiKeyId, -1);
        this.callsPerToken.add(tokenId, -1);
        this.observe(this.counts);
      },
    };
  }
}
