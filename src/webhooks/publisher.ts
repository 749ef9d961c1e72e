// Writes an event to the outbox for every endpoint that receives it, then wakes the dispatcher.
import type { WebhookEventType } from '../config/webhookEventTypes.js';
import { webhookEvent, type WebhookEvent } from './events.js';
import type { WebhookDispatcher } from './dispatcher.js';
import type { WebhookEndpointStore } from './endpoints.js';
import type { WebhookOutbox } from './outbox.js';

export class WebhookPublisher {
  constructor(
    private readonly endpoints: WebhookEndpointStore,
    private readonly outbox: WebhookOutbox,
    private readonly dispatcher: WebhookDispatcher,
  ) {}

  /** Resolves once the event is in the store (for each endpoint that receives it), or with undefined for none. */
  async publish(apiKeyId: string, type: WebhookEventType, data: Record<string, unknown>): Promise<WebhookEvent | undefined> {
    const receivers = await this.endpoints.receiving(apiKeyId, type);
    if (!receivers.length) return undefined;
    const event = webhookEvent(type, data);
    await this.outbox.enqueue(event, apiKeyId, receivers);
    this.dispatcher.kick();
    return event;
  }
}
