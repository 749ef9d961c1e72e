// Settings of one area. The store, Redis and the nodes of a cluster. src/config/env.ts merges the areas into the one validated table.
import { concreteIp, databaseUrl, int, type Setting, str } from '../parsers.js';

export const clusterSettings = {
  DATABASE_URL: {
    doc: 'sqlite:<path> (embedded, default <DATA_DIR>/parley.db) or postgres://user@host/db.',
    parse: databaseUrl,
  },
  REDIS_URL: { doc: 'redis://host:port; shares call counts and key revocations across nodes. Optional.', parse: str },
  NODE_ID: {
    doc: "This node's id in the nodes registry and on its calls' records; keep it across restarts and unique per node. Unset: generated once into <DATA_DIR>/node-id.",
    parse: (raw: string) => {
      if (!/^[\w.:-]{1,64}$/.test(raw)) throw new Error('use 1-64 letters, digits, or . _ : -');
      return raw;
    },
  },
  NODE_HEARTBEAT_MS: { doc: "How often a node records that it is alive (and checks for other nodes' lost calls).", default: '5000', parse: int(100, 600_000) },
  NODE_LOST_AFTER_MS: {
    doc: 'A node silent this long is taken for dead: its unfinished calls are recorded failed (node_lost) by the others. At least twice NODE_HEARTBEAT_MS, and more than the clock skew between nodes.',
    default: '30000',
    parse: int(500, 3_600_000),
  },
  INTERNAL_HOST: {
    doc: "Address of each worker's node-to-node listener, where other workers and nodes pass it calls it should answer and requests for calls it carries. Several machines: this machine's address on the network the nodes share (never public). Not a wildcard: it is also the address the others are given.",
    default: '127.0.0.1',
    parse: concreteIp,
  },
  INTERNAL_PORT: { doc: 'Port of the node-to-node listener (worker N uses INTERNAL_PORT+N-1); 0 picks a free one per worker.', default: '0', parse: int(0, 65535) },
} satisfies Record<string, Setting<unknown>>;
