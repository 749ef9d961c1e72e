// Where webhooks (and a session's MCP servers) may be sent (src/system/outboundPolicy.ts): the guard built from the settings,
// which knows Parley's own listeners (this node's HTTP port, every node's node-to-node listener
// from the registry), and the check of an endpoint's URL when it is added or configured.
import type { Config } from '../config/env.js';
import type { NodeStore } from '../storage/nodes.js';
import { hostResolver } from '../system/hostResolver.js';
import { OutboundPolicy, type Listener } from '../system/outboundPolicy.js';
import { allowedAddresses, type OutboundGuard } from '../system/outboundRequest.js';

/** The guard of requests to URLs a user chose (webhooks, a session's MCP servers); `httpListener` is this node's HTTP port once known. */
export function webhookGuard(config: Config, nodes: NodeStore, httpListener: () => Listener | undefined): OutboundGuard {
  return {
    policy: new OutboundPolicy(config.WEBHOOK_ALLOWED_CIDRS, 'WEBHOOK_ALLOWED_CIDRS'),
    resolve: hostResolver(config.WEBHOOK_DNS_SERVERS),
    async ownListeners() {
      // Every node not stopped: a crashed one's port may be another process's now, refused all the same.
      const internal = (await nodes.live(new Date(0).toISOString())).flatMap((n) => (n.url ? [listenerOf(n.url)] : []));
      const http = httpListener();
      return http ? [http, ...internal] : internal;
    },
  };
}

/** The HTTP listener the settings name, when its port is fixed (PORT=0 picks one at start). */
export function configuredHttpListener(config: Config): Listener | undefined {
  return config.PORT ? { host: config.HOST, port: config.PORT } : undefined;
}

/**
 * Throws when `url` may not receive webhooks: OutboundRefused when its literal address or an
 * address it resolves to now is refused, the resolver's error when it does not resolve.
 */
export async function checkWebhookUrl(url: string, guard: OutboundGuard): Promise<void> {
  await allowedAddresses(new URL(url), guard);
}

function listenerOf(nodeUrl: string): Listener {
  const url = new URL(nodeUrl);
  return { host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(url.port) };
}
