// Keeps the records truthful when nodes die: this node heartbeats; at start it records failed the
// calls its earlier incarnation left unfinished (a crash or kill -9); and every node periodically
// records failed the unfinished calls of nodes silent for longer than NODE_LOST_AFTER_MS. The
// heartbeat also writes call ends that an outage of the database kept in memory.
import type { ConversationRecord, ConversationStore } from './conversations.js';
import type { DbAvailability } from './db.js';
import type { NodeFacts, NodeStore } from './nodes.js';
import { StoreUnavailable } from './unavailable.js';

/** End reason of a call whose node died (or was cut off from the database) while carrying it. */
export const NODE_LOST = 'node_lost';
/** Nodes silent this long are removed from the registry (their calls were reconciled long before). */
const FORGET_AFTER_MS = 7 * 24 * 3600 * 1000;

export interface NodeLivenessOptions {
  nodeId: string;
  heartbeatMs: number;
  lostAfterMs: number;
  /** Extra facts for each heartbeat (call counts, addresses…). */
  facts?: () => NodeFacts;
  /** Told the calls this node recorded failed for a lost node (their call.failed webhooks). */
  lost?: (calls: ConversationRecord[]) => Promise<void>;
}

interface Log {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export class NodeLiveness {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private outage = false;

  constructor(
    private readonly nodes: NodeStore,
    private readonly conversations: ConversationStore,
    private readonly availability: DbAvailability,
    private readonly opts: NodeLivenessOptions,
    private readonly log: Log,
  ) {}

  async start(): Promise<void> {
    const { nodeId } = this.opts;
    await this.nodes.register(nodeId, this.opts.facts?.());
    const failed = await this.conversations.failCallsOfNode(nodeId, NODE_LOST);
    if (failed.length) this.log.warn({ node: nodeId, calls: failed.length }, `calls left unfinished by this node's previous run recorded failed (${NODE_LOST})`);
    await this.told(failed);
    this.timer = setInterval(() => {
      this.running ??= this.tick().finally(() => (this.running = undefined));
    }, this.opts.heartbeatMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
    await this.conversations.writeUnwrittenEnds().catch(() => {});
    await this.nodes.markStopped(this.opts.nodeId).catch(() => {});
  }

  /** A heartbeat now (facts changed), in turn with the periodic ones. */
  async heartbeatNow(): Promise<void> {
    await this.running;
    this.running ??= this.tick().finally(() => (this.running = undefined));
    await this.running;
  }

  /** Tells `lost` of calls recorded failed here; its failure is logged (the records are right either way). */
  private async told(calls: ConversationRecord[]): Promise<void> {
    if (!calls.length || !this.opts.lost) return;
    await this.opts.lost(calls).catch((err: Error) => this.log.error({ err, calls: calls.map((c) => c.id) }, 'lost calls not told to webhooks'));
  }

  private async tick(): Promise<void> {
    const { nodeId, lostAfterMs } = this.opts;
    try {
      await this.nodes.heartbeat(nodeId, this.opts.facts?.());
      if (this.outage) {
        this.outage = false;
        this.log.info({ node: nodeId }, 'database reachable again');
      }
      const written = await this.conversations.writeUnwrittenEnds();
      if (written) this.log.info({ calls: written }, 'call ends kept during the database outage recorded');
      // After an outage every node's heartbeat is old: judge others only once they have had a
      // whole NODE_LOST_AFTER_MS of database to heartbeat in.
      if (Date.now() - this.availability.upSince < lostAfterMs) return;
      const now = Date.now();
      const failed = await this.conversations.failCallsOfSilentNodes(new Date(now - lostAfterMs).toISOString(), nodeId, NODE_LOST);
      if (failed.length) this.log.warn({ calls: failed.length, silentForMs: lostAfterMs }, `calls of silent nodes recorded failed (${NODE_LOST})`);
      await this.told(failed);
      await this.nodes.forgetSilentSince(new Date(now - FORGET_AFTER_MS).toISOString());
    } catch (err) {
      if (!(err instanceof StoreUnavailable)) return this.log.error({ err }, 'node heartbeat failed');
      if (!this.outage) this.log.warn({ node: nodeId, err: err.message }, 'database unreachable: heartbeats and call records wait for it');
      this.outage = true;
    }
  }
}
