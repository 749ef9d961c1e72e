// The webhook event types and the envelope every event travels in (OpenAI's webhook shape).
import { randomId } from '../system/ids.js';

export const WEBHOOK_EVENT_TYPES = ['call.started', 'call.ended', 'call.failed', 'call.turn', 'realtime.call.incoming'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

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

/** Parses a comma-separated list of event types; throws naming the unknown ones. */
export function parseEventTypes(raw: string): WebhookEventType[] {
  const types = raw.split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = types.filter((t) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(t));
  if (unknown.length) throw new Error(`unknown event type(s) ${unknown.join(', ')}; known: ${WEBHOOK_EVENT_TYPES.join(', ')}`);
  if (!types.length) throw new Error(`name at least one event type: ${WEBHOOK_EVENT_TYPES.join(', ')}`);
  return [...new Set(types)] as WebhookEventType[];
}
