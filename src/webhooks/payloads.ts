// The `data` of each call event, built in one place per event type, typed by the schemas the OpenAPI
// document publishes (its `webhooks`), so what is sent and what is documented cannot drift apart.
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import type { Call } from '../calls/call.js';
import type { WebhookEventType } from '../config/webhookEventTypes.js';
import { sipStatusOf, type ConversationRecord } from '../storage/conversations.js';
import { CallQualitySchema, CallUsageSchema } from '../calls/callFigures.js';

/** When a call was created, connected and ended (unix ms), as its webhook observer saw it. */
export interface CallTimes {
  startedAt: number;
  connectedAt: number | null;
  endedAt: number;
}

const UnixSeconds = (description: string) => Type.Integer({ description: `${description} (unix seconds)` });
const callIds = {
  call_id: Type.String({ description: 'The call (its conversation id, conv_…)' }),
  api_key_id: Type.String({ description: 'The API key the call was opened under' }),
};

export const CallStartedData = Type.Object(
  {
    ...callIds,
    transport: Type.String({ description: 'The front door: webrtc, websocket or sip' }),
    started_at: UnixSeconds('When the call was admitted'),
    connected_at: UnixSeconds('When media first flowed'),
  },
  { title: 'CallStartedData' },
);

export const CallEndedData = Type.Object(
  {
    ...callIds,
    state: Type.Union([Type.Literal('ended'), Type.Literal('failed')]),
    end_reason: Type.String({ description: 'hangup, session_end, connect_timeout, connection_lost, …' }),
    transport: Type.String({ description: 'The front door: webrtc, websocket or sip' }),
    started_at: UnixSeconds('When the call was admitted'),
    connected_at: Type.Union([UnixSeconds('When media first flowed'), Type.Null()]),
    ended_at: UnixSeconds('When the call ended'),
    duration_s: Type.Number({ description: 'Connected time in seconds (0 for a call that never connected)' }),
    sip_status: Type.Union([Type.Integer(), Type.Null()], { description: "An outbound SIP call's final INVITE status: 200 answered, 486 busy, 487 unanswered (end_reason no_answer), 408 unreachable, 603 declined…; null for other calls" }),
    usage: CallUsageSchema,
    quality: Type.Union([CallQualitySchema, Type.Null()]),
  },
  { title: 'CallEndedData' },
);

export const CallTurnData = Type.Object(
  {
    ...callIds,
    role: Type.Union([Type.Literal('user'), Type.Literal('assistant')]),
    transcript: Type.String(),
  },
  { title: 'CallTurnData' },
);

export const SipHeader = Type.Object({ name: Type.String(), value: Type.String() }, { title: 'SipHeader' });

export const RealtimeCallIncomingData = Type.Object(
  {
    call_id: Type.String({ description: 'The ringing call (conv_…): accept, reject or refer it under /v1/realtime/calls/{call_id}/' }),
    sip_headers: Type.Array(SipHeader, { description: "The INVITE's headers in their order (From, To, Call-ID and the rest), names in their usual spelling" }),
  },
  { title: 'RealtimeCallIncomingData' },
);

/** Each event type's data and what it is sent for. */
export const WEBHOOK_PAYLOADS: Record<WebhookEventType, { data: TSchema; description: string }> = {
  'call.started': { data: CallStartedData, description: 'A call connected: media flows.' },
  'call.ended': { data: CallEndedData, description: 'A call ended (state ended), with its usage and quality.' },
  'call.failed': { data: CallEndedData, description: 'A call ended in state failed (instead of call.ended): connect_timeout, ice_failed, node_lost…' },
  'call.turn': { data: CallTurnData, description: 'Opt-in: a user or assistant turn completed, with its transcript.' },
  'realtime.call.incoming': {
    data: RealtimeCallIncomingData,
    description: 'Opt-in: a SIP call rings. Answer it with POST /v1/realtime/calls/{call_id}/accept, /reject or /refer within SIP_ROUTING_TIMEOUT_MS, else SIP_DEFAULT_ROUTE applies.',
  },
};

const seconds = (ms: number): number => Math.floor(ms / 1000);

export function callStartedData(call: Call, times: { startedAt: number; connectedAt: number }): Static<typeof CallStartedData> {
  return {
    call_id: call.id,
    api_key_id: call.apiKeyId,
    transport: call.transportKind,
    started_at: seconds(times.startedAt),
    connected_at: seconds(times.connectedAt),
  };
}

/** call.ended's and call.failed's data: how the call went, from creation to end. */
export function callEndedData(call: Call, times: CallTimes): Static<typeof CallEndedData> {
  return {
    call_id: call.id,
    api_key_id: call.apiKeyId,
    state: call.state === 'failed' ? 'failed' : 'ended',
    end_reason: call.endReason ?? 'unknown',
    transport: call.transportKind,
    started_at: seconds(times.startedAt),
    connected_at: times.connectedAt === null ? null : seconds(times.connectedAt),
    ended_at: seconds(times.endedAt),
    // Connected time: zero for a call that never connected.
    duration_s: times.connectedAt === null ? 0 : Math.round(times.endedAt - times.connectedAt) / 1000,
    sip_status: sipStatusOf(call.wireOutcome),
    // Audio seconds each way and model tokens; the wire's loss, jitter, round trips and bitrates (null when it never connected).
    ...call.figures(),
  };
}

/**
 * call.failed's data for a call its node was lost with (recorded failed by another node, or by its
 * own next start): what its record holds; its usage and quality died with the node.
 */
export function lostCallData(record: ConversationRecord): Static<typeof CallEndedData> {
  const startedAt = Date.parse(record.createdAt);
  const connectedAt = record.connectedAt === null ? null : Date.parse(record.connectedAt);
  const endedAt = record.endedAt === null ? Date.now() : Date.parse(record.endedAt);
  return {
    call_id: record.id,
    api_key_id: record.apiKeyId,
    state: 'failed',
    end_reason: record.endReason ?? 'unknown',
    transport: record.transport ?? 'unknown',
    started_at: seconds(startedAt),
    connected_at: connectedAt === null ? null : seconds(connectedAt),
    ended_at: seconds(endedAt),
    sip_status: sipStatusOf(record.outcome),
    duration_s: connectedAt === null ? 0 : Math.round(endedAt - connectedAt) / 1000,
    usage: { caller_audio_s: 0, agent_audio_s: 0, input_tokens: 0, output_tokens: 0, video_frames_received: 0, video_frames_to_model: 0 },
    quality: null,
  };
}

export function realtimeCallIncomingData(call: { callId: string; sipHeaders: { name: string; value: string }[] }): Static<typeof RealtimeCallIncomingData> {
  return { call_id: call.callId, sip_headers: call.sipHeaders };
}

export function callTurnData(call: Call, turn: { role: 'user' | 'assistant'; text: string }): Static<typeof CallTurnData> {
  return { call_id: call.id, api_key_id: call.apiKeyId, role: turn.role, transcript: turn.text };
}
