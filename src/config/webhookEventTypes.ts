// The names of the webhook event types. Here, below webhooks, because a setting (WEBHOOK_EVENTS)
// names them.

export const WEBHOOK_EVENT_TYPES = ['call.started', 'call.ended', 'call.failed', 'call.turn', 'realtime.call.incoming'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** Parses a comma-separated list of event types; throws naming the unknown ones. */
export function parseEventTypes(raw: string): WebhookEventType[] {
  const types = raw.split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = types.filter((t) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(t));
  if (unknown.length) throw new Error(`unknown event type(s) ${unknown.join(', ')}; known: ${WEBHOOK_EVENT_TYPES.join(', ')}`);
  if (!types.length) throw new Error(`name at least one event type: ${WEBHOOK_EVENT_TYPES.join(', ')}`);
  return [...new Set(types)] as WebhookEventType[];
}
