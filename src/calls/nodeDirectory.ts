// Where calls can go besides this node: the other live nodes of the registry (workers of this
// machine and nodes sharing its database), with their listeners, how full and how loaded they were
// at their last heartbeat.
import type { NodesTable } from '../storage/db.js';
import type { NodeStore } from '../storage/nodes.js';

export interface NodeDirectoryOptions {
  selfId: string;
  /** A node whose last heartbeat is older than this is not offered calls. */
  freshForMs: number;
}

export class NodeDirectory {
  constructor(
    private readonly nodes: NodeStore,
    private readonly opts: NodeDirectoryOptions,
  ) {}

  /**
   * Other live nodes with room for a call (under their call limit, and taking calls under their load
   * threshold), least loaded first: by load figure, then by share of their call limit.
   */
  async withRoom(): Promise<NodesTable[]> {
    const since = new Date(Date.now() - this.opts.freshForMs).toISOString();
    const live = await this.nodes.live(since);
    return live
      .filter((n) => n.id !== this.opts.selfId && n.url && n.calls < n.max_calls && Number(n.accepting) === 1)
      .sort((a, b) => a.load - b.load || a.calls / a.max_calls - b.calls / b.max_calls || a.calls - b.calls);
  }

  /** The listener of node `id` while it is running, else undefined. */
  async urlOf(id: string): Promise<string | undefined> {
    const node = await this.nodes.get(id);
    return node && !node.stopped_at ? (node.url ?? undefined) : undefined;
  }
}
