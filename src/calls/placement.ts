// Where a call goes that this node takes no more (at its limit, or above its load threshold): to
// the other live nodes with room (nodeDirectory.ts), least loaded first, each offered it in turn
// until one takes it. Every door places its calls through here: a WebRTC offer passed on
// (http/nodeForwarding.ts), a WebSocket session relayed (http/routes/realtimeSocket.ts), a SIP
// INVITE redirected (sip/start.ts); each counts in parley_calls_forwarded_total, by the status the
// other node gave and why this one did not take the call.
import type { FastifyBaseLogger } from 'fastify';
import type { Metrics } from '../observability/metrics.js';
import type { NodesTable } from '../storage/db.js';
import type { Admission } from './admission.js';
import type { NodeDirectory } from './nodeDirectory.js';

export type Door = 'webrtc' | 'websocket' | 'sip';

/** A node took the call: the status it answered (counted), and what the door hands its caller. */
export interface Taken<T> {
  status: number;
  value: T;
}

export interface PlacementRequest {
  door: Door;
  /** The request's log (its id bound). */
  log: FastifyBaseLogger;
  /** Only nodes this holds for are offered the call (e.g. those with a SIP door). */
  only?: (node: NodesTable) => boolean;
}

export class Placement {
  constructor(
    private readonly directory: NodeDirectory,
    private readonly admission: Admission,
    private readonly metrics: Metrics,
  ) {}

  /**
   * Offers the call to each other node with room in turn; `offer` resolves to what the node answered
   * when it took the call, or undefined (or rejects) when it did not (gone, full, draining). Resolves
   * to the first taker's value, or undefined when none took it (this node answers then).
   */
  async elsewhere<T>(req: PlacementRequest, offer: (node: NodesTable) => Promise<Taken<T> | undefined>): Promise<T | undefined> {
    const { door, log, only } = req;
    const nodes = await this.directory.withRoom().catch((err: Error) => {
      log.warn({ door, err: err.message }, 'other nodes unknown (the registry did not answer): the call stays here');
      return [];
    });
    const reason = this.admission.loaded ? 'loaded' : 'full';
    for (const node of nodes) {
      if (only && !only(node)) continue;
      const taken = await offer(node).catch((err: Error) => {
        log.warn({ door, node: node.id, err: err.message }, 'node did not take a call passed to it');
        return undefined;
      });
      if (!taken) continue;
      this.metrics.callsForwarded.inc({ status: String(taken.status), reason });
      log.info({ door, node: node.id, status: taken.status, reason }, 'call placed on another node');
      return taken.value;
    }
    return undefined;
  }
}
