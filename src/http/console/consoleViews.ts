// What the console's data routes answer: their schemas, and the records of calls, conversations
// and keys as the page reads them.
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import type { ApiKeyRecord } from '../../auth/apiKeys.js';
import type { Call } from '../../calls/call.js';
import { CallQualitySchema, CallUsageSchema, round } from '../../calls/callFigures.js';
import type { ConversationCursor, ConversationRecord, StoredTurn } from '../../storage/conversations.js';
import type { WebhookEndpoint } from '../../webhooks/endpoints.js';
import type { Delivery } from '../../webhooks/outbox.js';
import { recordLifecycle } from '../routes/conversations.js';

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const Usage = Nullable(CallUsageSchema);
const Quality = Nullable(CallQualitySchema);

export const LiveCall = Type.Object({
  id: Type.String(),
  api_key_id: Type.String(),
  state: Type.String(),
  transport: Type.String({ description: 'webrtc or websocket' }),
  model: Type.String({ description: "The catalogue model running the call now (its fallback's, after its model failed)" }),
  started_at: Type.String(),
  connected_at: Nullable(Type.String()),
  duration_s: Type.Number({ description: 'Seconds since the call was created' }),
  usage: Usage,
  quality: Quality,
});

export const LiveCallsResponse = Type.Object({ node_id: Type.String(), calls: Type.Array(LiveCall) });

const conversationFields = {
  id: Type.String(),
  api_key_id: Type.String(),
  state: Type.String(),
  end_reason: Nullable(Type.String()),
  created_at: Type.String(),
  connected_at: Nullable(Type.String()),
  ended_at: Nullable(Type.String()),
  end_user: Nullable(Type.String()),
  node_id: Nullable(Type.String()),
  usage: Usage,
  quality: Quality,
};

export const ConversationSummary = Type.Object(conversationFields);

export const ConversationsPage = Type.Object({
  data: Type.Array(ConversationSummary),
  next: Nullable(Type.String({ description: 'Pass as `after` for the next (older) page; null on the last' })),
});

export const ConversationDetail = Type.Object({
  ...conversationFields,
  thread_id: Type.String(),
  params: Type.Record(Type.String(), Type.Unknown()),
  items: Type.Array(Type.Object({ role: Type.String(), text: Type.String(), created_at: Type.String() })),
  recording: Nullable(Type.String({ description: 'recording, complete or failed (GET …/recording plays it); null: not recorded' })),
});

export const ApiKeyView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  prefix: Type.String(),
  created_at: Type.String(),
  last_used_at: Nullable(Type.String()),
  revoked_at: Nullable(Type.String()),
});

const KeyUsageView = Type.Object(
  {
    calls: Type.Integer(),
    input_tokens: Type.Integer({ description: "Model input tokens over the key's calls (realtime models upstream: as they reported)" }),
    output_tokens: Type.Integer(),
    caller_audio_s: Type.Number(),
    agent_audio_s: Type.Number(),
  },
  { description: 'Summed over the calls of the last 30 days that ended' },
);

export const ApiKeysResponse = Type.Object({ data: Type.Array(Type.Object({ ...ApiKeyView.properties, usage_30d: KeyUsageView })) });
export const CreatedApiKey = Type.Object({ ...ApiKeyView.properties, key: Type.String({ description: 'The key itself: shown this once' }) });
const WebhookEndpointView = Type.Object({
  id: Type.String(),
  api_key_id: Nullable(Type.String({ description: 'The key whose calls it receives; null for the global one (WEBHOOK_URL), which receives every key’s' })),
  url: Type.String(),
  events: Type.String({ description: 'The event types it receives, comma-separated' }),
  status: Type.String({ description: 'active, or disabled (the receiver answered 410 Gone)' }),
  created_at: Type.String(),
});
const WebhookDeliveryView = Type.Object({
  event_id: Type.String(),
  type: Type.String(),
  endpoint_id: Type.String(),
  url: Type.String(),
  status: Type.String(),
  attempts: Type.Integer(),
  last_status_code: Nullable(Type.Integer()),
  last_error: Nullable(Type.String()),
  next_attempt_at: Nullable(Type.String({ description: 'When it is tried again, while pending' })),
  created_at: Type.String(),
});
export const WebhooksResponse = Type.Object({ endpoints: Type.Array(WebhookEndpointView), deliveries: Type.Array(WebhookDeliveryView) });

/** An endpoint as the console shows it: never its secret. */
export function webhookEndpointView(e: WebhookEndpoint): Static<typeof WebhookEndpointView> {
  return { id: e.id, api_key_id: e.apiKeyId, url: e.url, events: e.events.join(','), status: e.disabledAt ? 'disabled' : 'active', created_at: e.createdAt };
}

export function webhookDeliveryView(d: Delivery): Static<typeof WebhookDeliveryView> {
  return {
    event_id: d.eventId,
    type: d.eventType,
    endpoint_id: d.endpointId,
    url: d.url,
    status: d.status,
    attempts: d.attempts,
    last_status_code: d.lastStatusCode,
    last_error: d.lastError,
    next_attempt_at: d.status === 'pending' ? new Date(d.nextAttemptAt).toISOString() : null,
    created_at: d.createdAt,
  };
}

export const RevokedApiKey = Type.Object({ id: Type.String(), outcome: Type.Union([Type.Literal('revoked'), Type.Literal('already-revoked')]) });

export function liveCallView(call: Call, now = Date.now()): Static<typeof LiveCall> {
  const { usage, quality } = call.figures();
  return {
    id: call.id,
    api_key_id: call.apiKeyId,
    state: call.state,
    transport: call.transportKind,
    model: call.model,
    started_at: call.startedAt.toISOString(),
    connected_at: call.connectedAt?.toISOString() ?? null,
    duration_s: round((now - call.startedAt.getTime()) / 1000),
    usage,
    quality,
  };
}

export function conversationSummary(record: ConversationRecord): Static<typeof ConversationSummary> {
  return {
    id: record.id,
    api_key_id: record.apiKeyId,
    ...recordLifecycle(record),
    node_id: record.nodeId,
    usage: record.usage as Static<typeof Usage>,
    quality: record.quality as Static<typeof Quality>,
  };
}

export function conversationDetail(record: ConversationRecord, turns: StoredTurn[]): Static<typeof ConversationDetail> {
  return {
    ...conversationSummary(record),
    thread_id: record.threadId,
    params: record.params,
    items: turns.map((t) => ({ role: t.role, text: t.text, created_at: t.createdAt })),
    recording: record.recording,
  };
}

export function apiKeyView(record: ApiKeyRecord): Static<typeof ApiKeyView> {
  return {
    id: record.id,
    name: record.name,
    prefix: record.prefix,
    created_at: record.createdAt,
    last_used_at: record.lastUsedAt,
    revoked_at: record.revokedAt,
  };
}

/** A page's end as the opaque `next` value, and back (undefined: not one of ours). */
export function encodeCursor(record: ConversationRecord): string {
  return Buffer.from(`${record.createdAt}\n${record.id}`).toString('base64url');
}

export function decodeCursor(value: string): ConversationCursor | undefined {
  const [createdAt, id, ...rest] = Buffer.from(value, 'base64url').toString('utf8').split('\n');
  if (!createdAt || !id || rest.length || Number.isNaN(Date.parse(createdAt))) return undefined;
  return { createdAt, id };
}
