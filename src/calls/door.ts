// The one way a door opens a call. Whatever its wire — a WebRTC offer, OpenAI's WebSocket, a SIP
// INVITE, an outbound phone call — a door hands openCall the caller's request, how to make the
// call's transport once it is admitted, and how to offer the call to another node; it gets back
// the live call, or one refusal from the union below, which it answers in its own terms from one
// table (an HTTP status and error body, a SIP status). The order is the same for every door: a
// drain first, then the caller's own limits (admission.ts, the key's calls across the nodes
// included), then the node's room and load; a node with no room offers the call to the other nodes
// (placement.ts, through the door's `elsewhere`), and a node only loaded past a load threshold the
// operator did not set takes it itself when none does.
import { CallCapacityExceeded, CallLimitExceeded, type AdmitOptions, type CallLimit } from './admission.js';
import type { Call } from './call.js';
import type { CallManager, CallRequest } from './callManager.js';
import { TransportRejected, type PendingTransport } from './transport.js';

/** Why a door's call was not opened here; `placed`: what another node that took it answered, for the door to hand on. */
export type Refusal<Placed = never> =
  /** The caller is at one of its own limits (calls per key, across the nodes too, per token, half-open per key). */
  | { kind: 'limited'; message: string; limit: CallLimit }
  /** The node is at its call limit or its half-open budget. */
  | { kind: 'full'; message: string; placed?: Placed }
  /** The node is above its load threshold. */
  | { kind: 'loaded'; message: string; placed?: Placed }
  /** The node is shutting down. */
  | { kind: 'draining'; message: string }
  /** The client's request cannot be used by its wire (an SDP offer the WebRTC stack refuses). */
  | { kind: 'rejected'; message: string }
  /** The key may not use the model the session names. */
  | { kind: 'model_not_allowed'; message: string; model: string }
  /** The model the session names cannot be reached now. */
  | { kind: 'model_unavailable'; message: string; model: string };

export type RefusalKind = Refusal['kind'];

/** What a door hands openCall. */
export interface DoorRequest<Accepted, Placed = never> {
  /** Who calls, with which session (and, with a client channel, which event protocol). */
  request: CallRequest;
  /** Makes the call's transport for its id, once the call is admitted, and how to accept the client's request. */
  open(callId: string): PendingTransport<Accepted> | Promise<PendingTransport<Accepted>>;
  /**
   * Offers the call to the other nodes with room (placement.ts): what the node that took it
   * answered, in the door's terms, or undefined when none did. Absent where the door cannot pass it
   * on (a request another node already passed here).
   */
  elsewhere?: () => Promise<Placed | undefined>;
}

export type Opened<Accepted, Placed = never> = { ok: true; call: Call; accepted: Accepted } | { ok: false; refusal: Refusal<Placed> };

/** Opens the door's call on this node, or says why not (and where it went, when another node took it). */
export async function openCall<Accepted, Placed = never>(calls: CallManager, door: DoorRequest<Accepted, Placed>): Promise<Opened<Accepted, Placed>> {
  // The model first: a key that may not use it is refused whatever the node's room (another node
  // would refuse it too), and a model no node can run now is not worth a place.
  const model = modelRefusal(calls, door.request);
  if (model) return { ok: false, refusal: model };
  const first = await attempt(calls, door);
  if (first.ok) return first;
  const { refusal } = first;
  if (refusal.kind !== 'full' && refusal.kind !== 'loaded') return { ok: false, refusal };
  const placed = await door.elsewhere?.();
  if (placed !== undefined) return { ok: false, refusal: { ...refusal, placed } };
  // Nobody else took it, and the load threshold is not the operator's: this node takes it, degraded.
  if (!first.mayTakeAlone) return { ok: false, refusal };
  const again = await attempt(calls, door, { despiteLoad: true });
  return again.ok ? again : { ok: false, refusal: again.refusal };
}

async function attempt<Accepted, Placed>(
  calls: CallManager,
  door: DoorRequest<Accepted, Placed>,
  admit: AdmitOptions = {},
): Promise<{ ok: true; call: Call; accepted: Accepted } | { ok: false; refusal: Refusal<Placed>; mayTakeAlone: boolean }> {
  try {
    const { call, accepted } = await calls.create(door.request, (id) => door.open(id), admit);
    return { ok: true, call, accepted };
  } catch (err) {
    const refusal = refusalOf(err);
    if (!refusal) throw err;
    return { ok: false, refusal, mayTakeAlone: err instanceof CallCapacityExceeded && err.mayTakeAlone };
  }
}

function modelRefusal(calls: CallManager, request: CallRequest): Refusal | undefined {
  const { model } = request.session;
  if (!calls.models.allows(model, request.apiKeyId)) {
    return { kind: 'model_not_allowed', model, message: `This API key may not use the model ${model}; GET /v1/realtime/models lists the models it may use.` };
  }
  if (!calls.models.choose(model)) {
    return { kind: 'model_unavailable', model, message: `The model ${model} cannot take calls on this server now (it is failing, or its engines are not installed here, and no fallback is available).` };
  }
  return undefined;
}

/** The refusal an error of the call manager stands for; undefined for a failure (a store error). */
function refusalOf(err: unknown): Refusal | undefined {
  if (err instanceof CallLimitExceeded) return { kind: 'limited', message: err.message, limit: err.limit };
  if (err instanceof CallCapacityExceeded) return { kind: err.why, message: err.message };
  if (err instanceof TransportRejected) return { kind: 'rejected', message: err.message };
  return undefined;
}
