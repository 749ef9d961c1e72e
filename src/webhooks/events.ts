// The envelope every webhook event travels in (OpenAI's webhook shape), and the events an endpoint gets by default.
import type { WebhookEventType } from '../config/webhookEventTypes.js';
import { randomId } from '../system/ids.js';

/**
 * What an endpoint receives unless it names its events. call.turn is opt-in; so is
 * realtime.call.incoming: an endpoint receiving it routes SIP calls (each waits for its decision).
 */
export const DEFAULT_WEBHOOK_EVENTS: WebhookEventType[] = ['call.started', 'call.ended', 'call.failed'];

export interface WebhookEvent {
  object: 'event';
  id: string;
  type: WebhookEventType;
  /** Unix seconds. */
  created_at: number;
  data: Record<string, unknown>;
}

export function webhookEvent(type: WebhookEventType, data: Record<string, unknown>): WebhookEvent {
  return { object: 'event', id: randomId('evt_'), type, created_at: Math.floor(Date.now() / 1000), data };
}
