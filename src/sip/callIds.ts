// The Call-IDs of the dialogs Parley starts (an upstream REGISTER, an outbound INVITE), and which
// worker a SIP message belongs to under PARLEY_WORKERS. There the primary holds SIP's sockets and
// hands every message to one worker by its Call-ID (clusterRelay.ts): a Call-ID Parley made names
// the worker that made it (its answers go back there); any other goes where its hash says, so that
// every message of a caller's dialog reaches the same worker without a table of dialogs.
import { randomBytes } from 'node:crypto';
import { workerIndex } from '../system/workerIndex.js';

const OURS = /\.w(\d+)@parley$/;

/** A new Call-ID for a dialog or registration of ours; under workers it names this one. */
export function newCallId(): string {
  const index = workerIndex();
  return `${randomBytes(10).toString('hex')}${index ? `.w${index}` : ''}@parley`;
}

/** The worker (1…`workers`) that `callId` belongs to: the one that made it, else its hash's. */
export function workerOfCallId(callId: string, workers: number): number {
  const named = Number(OURS.exec(callId)?.[1]);
  if (named >= 1 && named <= workers) return named;
  // FNV-1a: stable across processes and restarts (a dialog keeps its worker), and cheap.
  let hash = 0x811c9dc5;
  for (let i = 0; i < callId.length; i++) hash = Math.imul(hash ^ callId.charCodeAt(i), 0x01000193);
  return ((hash >>> 0) % workers) + 1;
}
