// Routing of incoming SIP calls the way OpenAI's SIP interface routes them: a ringing call is
// announced to the app (the realtime.call.incoming webhook) and waits for its decision — accept
// with a session, reject with a SIP status, refer to another address — made through the HTTP API.
// No decision in time: the default route. Nobody to announce it to: the default agent answers. An
// answered call can still be referred: a REFER inside its dialog transfers it.
import type { Session } from '../session/session.js';

export type RouteDecision =
  /** Answer; the app's session replaces the default agent's when given. */
  | { kind: 'accept'; session?: Session }
  /** A SIP final response (4xx–6xx). */
  | { kind: 'reject'; status: number }
  /** 302 Moved Temporarily to `target` (a SIP or tel URI). */
  | { kind: 'refer'; target: string };

/** Why a ringing call stopped waiting without a decision: the caller gave up, or the call ended. */
export type RouteOutcome = RouteDecision | { kind: 'abandoned' };

export interface IncomingCall {
  /** Parley's id of the call (conv_…). */
  callId: string;
  apiKeyId: string;
  /** The INVITE's headers, in order. */
  sipHeaders: { name: string; value: string }[];
}

export interface SipRoutingOptions {
  /** Tells the app a call rings; false when nobody receives the owner's realtime.call.incoming. */
  announce: (call: IncomingCall) => Promise<boolean>;
  timeoutMs: number;
  /** What a call nobody decided on in time gets. */
  defaultRoute: 'answer' | 'reject';
  /** Told what each ringing call became and who decided it (for metrics). */
  routed?: (decision: RouteOutcome['kind'], by: RouteAuthor) => void;
}

/** Who decided what a ringing call became. */
export type RouteAuthor = 'app' | 'default_route' | 'no_webhook' | 'unannounced' | 'caller' | 'transfer';

/** The decision call routes take: delivered, or why not. */
export type DecideResult = 'decided' | 'not_ringing';

/** The status a call the default route rejects gets. */
export const DEFAULT_REJECT_STATUS = 480;

export class SipRouting {
  private readonly ringing = new Map<string, { apiKeyId: string; decide: (d: RouteDecision) => void }>();
  /** Answered calls of this process, by id: how to transfer each. */
  private readonly live = new Map<string, { apiKeyId: string; transfer: (target: string) => void }>();

  constructor(private readonly opts: SipRoutingOptions) {}

  /** How long a ringing call waits for the app's decision at most. */
  get timeoutMs(): number {
    return this.opts.timeoutMs;
  }

  /** Resolves with the app's decision, the default route's, or abandoned once `signal` aborts. */
  async route(call: IncomingCall, signal: AbortSignal): Promise<RouteOutcome> {
    const fallback: RouteDecision = this.opts.defaultRoute === 'answer' ? { kind: 'accept' } : { kind: 'reject', status: DEFAULT_REJECT_STATUS };
    return new Promise<RouteOutcome>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const settle = (outcome: RouteOutcome, by: RouteAuthor) => {
        if (this.ringing.get(call.callId)?.decide !== decide) return;
        this.ringing.delete(call.callId);
        clearTimeout(timer);
        signal.removeEventListener('abort', abandon);
        this.opts.routed?.(outcome.kind, by);
        resolve(outcome);
      };
      const decide = (d: RouteDecision) => settle(d, 'app');
      const abandon = () => settle({ kind: 'abandoned' }, 'caller');
      // Registered before the app is told: its answer may come before the announcement resolves.
      this.ringing.set(call.callId, { apiKeyId: call.apiKeyId, decide });
      if (signal.aborted) return abandon();
      signal.addEventListener('abort', abandon);
      timer = setTimeout(() => settle(fallback, 'default_route'), this.opts.timeoutMs);
      this.opts.announce(call).then(
        (told) => {
          if (!told) settle({ kind: 'accept' }, 'no_webhook');
        },
        // The app cannot be told (the store is down): the call is not held up for nothing.
        () => settle(fallback, 'unannounced'),
      );
    });
  }

  /** Whether call `id` of key `apiKeyId` is ringing, waiting for a decision. */
  isRinging(id: string, apiKeyId: string): boolean {
    return this.ringing.get(id)?.apiKeyId === apiKeyId;
  }

  /** Call `id` was answered: `transfer` sends it to a target from now on. */
  answered(id: string, apiKeyId: string, transfer: (target: string) => void): void {
    this.live.set(id, { apiKeyId, transfer });
  }

  /** Call `id` is over: it can no longer be transferred. */
  ended(id: string): void {
    this.live.delete(id);
  }

  /** Transfers answered call `id` of key `apiKeyId` to `target`; false when there is no such call. */
  transfer(id: string, apiKeyId: string, target: string): boolean {
    const call = this.live.get(id);
    if (!call || call.apiKeyId !== apiKeyId) return false;
    call.transfer(target);
    this.opts.routed?.('refer', 'transfer');
    return true;
  }

  /** Delivers the app's decision for ringing call `id` of key `apiKeyId`. */
  decide(id: string, apiKeyId: string, decision: RouteDecision): DecideResult {
    const waiting = this.ringing.get(id);
    if (!waiting || waiting.apiKeyId !== apiKeyId) return 'not_ringing';
    waiting.decide(decision);
    return 'decided';
  }
}
