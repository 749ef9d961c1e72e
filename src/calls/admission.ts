// Who may open another call on this node. Every call holds a ticket from its offer to its end and
// counts against: the node's limit (MAX_CONCURRENT_CALLS), the calls of its API key
// (MAX_CALLS_PER_KEY) and of its token (MAX_CALLS_PER_TOKEN). Until its peer connects it is
// half-open and counts against a smaller budget as well, node-wide (MAX_HALF_OPEN_CALLS) and per
// key (MAX_HALF_OPEN_CALLS_PER_KEY): offers that never connect cost nothing to post, so they
// must not be able to hold the slots of live calls. SIP calls connecting (ringing, or answered and
// not yet ACKed) count against a budget of their own instead (SIP_MAX_HALF_OPEN_CALLS), neither their
// key's nor the node's: INVITEs cost nothing to send either, and a flood of them must not lock the
// key that owns SIP calls out of its WebRTC and WebSocket calls. Above its load threshold
// (LOAD_THRESHOLD) the node takes no call at all. Counted in this process (each node, each worker);
// with Redis a key's calls are counted across the nodes too (storage/keyCallCounts.ts), before a
// call is admitted: one mechanism for every door, since they all create calls through the manager.
import type { KeyCallCounts } from '../storage/keyCallCounts.js';

/** Whose call it is. */
export interface Caller {
  apiKeyId: string;
  /** The ephemeral token's id (jti). */
  tokenId: string;
  /** The SIP door: connecting, the call counts against SIP's half-open budget (maxHalfOpenSip). */
  door?: 'sip';
}

/** 0 turns a per-caller limit (or the half-open budget) off. */
export interface AdmissionLimits {
  maxCalls: number;
  maxHalfOpen: number;
  maxCallsPerKey: number;
  maxHalfOpenPerKey: number;
  maxCallsPerToken: number;
  /** SIP calls connecting at once, apart from the other budgets (at least 1). */
  maxHalfOpenSip: number;
}

export interface AdmissionCounts {
  calls: number;
  /** Calls connecting, SIP's included. */
  halfOpen: number;
}

/** Seconds a refused client is told to wait: half-open calls connect or time out within seconds. */
export const RETRY_AFTER_SECONDS = 5;

/** The node cannot take another call now, from anyone (answered 503 with Retry-After; another node may). */
export class CallCapacityExceeded extends Error {}

/** This caller is at one of its own limits (answered 429 with Retry-After; never passed to another node). */
export class CallLimitExceeded extends Error {
  constructor(
    message: string,
    /** Which limit: for parley_rate_limited_total{limit}. */
    readonly limit: 'calls-key' | 'calls-key-half-open' | 'calls-token-concurrent',
  ) {
    super(message);
  }
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
  private halfOpenSip = 0;
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
    return { calls: this.calls, halfOpen: this.halfOpen + this.halfOpenSip };
  }

  /** The node takes no call from anyone now (SIP's aside): at its limit, its half-open budget spent, or loaded. */
  get isFull(): boolean {
    const { maxCalls, maxHalfOpen } = this.limits;
    return this.calls >= maxCalls || (maxHalfOpen > 0 && this.halfOpen >= maxHalfOpen) || this.overload() !== undefined;
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
    if (caller.door !== 'sip' && maxHalfOpenPerKey > 0 && this.halfOpenPerKey.get(caller.apiKeyId) >= maxHalfOpenPerKey) {
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
   * at once may both refuse, never both admit. When the count cannot be had (Redis unreachable),
   * this node's own count, already checked, stands.
   */
  async admitAcrossNodes(caller: Caller): Promise<AdmissionTicket> {
    const ticket = this.admit(caller);
    const { maxCallsPerKey } = this.limits;
    if (!this.acrossNodes || maxCallsPerKey === 0) return ticket;
    const total = await this.acrossNodes.total(caller.apiKeyId);
    if (total === undefined || total <= maxCallsPerKey) return ticket;
    ticket.release();
    throw this.keyAtLimit();
  }

  /** A ticket for a new (half-open) call, counted on this node alone; throws CallLimitExceeded or CallCapacityExceeded. */
  admit(caller: Caller): AdmissionTicket {
    // The caller's own limits first: a caller at its limit is told so, not sent to another node.
    const refusal = this.callerRefusal(caller);
    if (refusal) throw refusal;
    if (this.calls >= this.limits.maxCalls) throw new CallCapacityExceeded('This server is at its limit of concurrent calls; retry shortly.');
    const loaded = this.overload();
    if (loaded) throw new CallCapacityExceeded(loaded);
    const sip = caller.door === 'sip';
    if (sip && this.halfOpenSip >= this.limits.maxHalfOpenSip) throw new CallCapacityExceeded('This server has too many SIP calls still connecting; retry shortly.');
    if (!sip && this.isFull) throw new CallCapacityExceeded('This server has too many calls still connecting; retry shortly.');
    const { apiKeyId, tokenId } = caller;
    this.calls++;
    this.callsPerKey.add(apiKeyId, 1);
    this.callsPerToken.add(tokenId, 1);
    if (sip) this.halfOpenSip++;
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
      if (sip) return void this.halfOpenSip--;
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
