// The node among the others: its heartbeat (liveness, what it tells them), the directory of the
// others calls can be passed to, and where its listeners are once they listen.
import type { Config } from '../config/env.js';
import type { Store } from '../auth/store.js';
import type { CallManager } from '../calls/callManager.js';
import { NodeDirectory } from '../calls/nodeDirectory.js';
import { NodeLiveness } from '../storage/nodeLiveness.js';
import type { NodeStore } from '../storage/nodes.js';
import type { Teardown } from '../system/teardown.js';
import { lostCallData } from '../webhooks/payloads.js';
import type { WebhookPublisher } from '../webhooks/publisher.js';
import type { LoadPart } from './load.js';
import type { OutboundPart } from './webhooks.js';
import type { Log } from './types.js';

export interface ClusterPart {
  nodeDirectory: NodeDirectory;
  /** Records where this node's node-to-node listener is, and the port its HTTP server got. */
  announce(url: string, httpPort: number): Promise<void>;
  /** Records where this node's SIP door listens for callers (host:port). */
  announceSip(address: string): Promise<void>;
}

export async function startCluster(
  config: Config,
  deps: { store: Store; nodeStore: NodeStore; nodeId: string; calls: CallManager; load: LoadPart; webhooks: WebhookPublisher; outbound: OutboundPart; log: Log },
  teardown: Teardown,
): Promise<ClusterPart> {
  const { store, nodeStore, nodeId, calls, load, webhooks, outbound, log } = deps;
  let nodeUrl: string | null = null;
  let sipAddress: string | null = null;
  const liveness = new NodeLiveness(
    nodeStore,
    store.conversations,
    store.database.availability,
    {
      nodeId,
      heartbeatMs: config.NODE_HEARTBEAT_MS,
      lostAfterMs: config.NODE_LOST_AFTER_MS,
      facts: () => ({ url: nodeUrl, calls: calls.activeCount, max_calls: config.MAX_CONCURRENT_CALLS, load: load.nodeLoad.value, accepting: load.nodeLoad.overloaded === undefined ? 1 : 0, sip_address: sipAddress, media_address: config.ICE_PUBLIC_IP ?? config.ICE_BIND_ADDRESS ?? null }),
      // A call lost with its node never told its end: the node that records it failed does.
      lost: async (lostCalls) => {
        for (const call of lostCalls) await webhooks.publish(call.apiKeyId, 'call.failed', lostCallData(call));
      },
    },
    log,
  );
  await liveness.start();
  teardown.add('node liveness', () => liveness.stop());
  // Tells the other nodes at once when this one stops or starts taking calls.
  load.turned.add(() => void liveness.heartbeatNow().catch(() => {}));
  return {
    // Offered calls only while its heartbeats are recent: a node killed a moment ago is not.
    nodeDirectory: new NodeDirectory(nodeStore, { selfId: nodeId, freshForMs: Math.min(config.NODE_LOST_AFTER_MS, 3 * config.NODE_HEARTBEAT_MS) }),
    async announce(url, httpPort) {
      nodeUrl = url;
      outbound.listening({ host: config.HOST, port: httpPort });
      await liveness.heartbeatNow();
    },
    async announceSip(address) {
      sipAddress = address;
      await liveness.heartbeatNow();
    },
  };
}
