// A call's webhook events, as an observer of the call: call.started when it connects, call.turn per
// completed turn, and at its end call.ended — or call.failed instead, for a call that ended failed
// (same data). Writing an event never holds the call up: a failed write is logged; the end's write
// is awaited (a drain waits for it). A call whose offer was refused (the client was answered 4xx)
// sends nothing.
import type { FastifyBaseLogger } from 'fastify';
import type { ConversationTurn } from '../agent/types.js';
import type { Call, CallObserver } from '../calls/call.js';
import type { WebhookEventType } from '../config/webhookEventTypes.js';
import { callEndedData, callStartedData, callTurnData } from './payloads.js';
import type { WebhookPublisher } from './publisher.js';

/** Ends of calls that never were: the client's request was refused and the call never recorded. */
const NOT_A_CALL = new Set(['offer_rejected', 'not_recorded']);

export class CallWebhooks implements CallObserver {
  private readonly startedAt = Date.now();
  private connectedAt: number | null = null;

  constructor(
    private readonly publisher: WebhookPublisher,
    private readonly log: FastifyBaseLogger,
  ) {}

  connected(call: Call): void {
    this.connectedAt = Date.now();
    void this.publish(call, 'call.started', callStartedData(call, { startedAt: this.startedAt, connectedAt: this.connectedAt }));
  }

  turn(call: Call, turn: ConversationTurn): void {
    void this.publish(call, 'call.turn', callTurnData(call, turn));
  }

  ended(call: Call): Promise<void> | void {
    if (NOT_A_CALL.has(call.endReason ?? '')) return;
    const type = call.state === 'failed' ? 'call.failed' : 'call.ended';
    return this.publish(call, type, callEndedData(call, { startedAt: this.startedAt, connectedAt: this.connectedAt, endedAt: Date.now() }));
  }

  private publish(call: Call, type: WebhookEventType, data: Record<string, unknown>): Promise<void> {
    return this.publisher.publish(call.apiKeyId, type, data).then(
      () => {},
      (err: Error) => this.log.error({ err, conversation: call.id, event: type }, 'webhook event not written'),
    );
  }
}
