// Two nodes of one cluster, as the multi-node tests start them: a scratch PostgreSQL database and a
// Redis of their own, node-a (which creates the development key) and node-b, each with the shared
// settings and its own; stopped in the reverse order.
import { scratchDatabase } from './postgres.ts';
import { startTestRedis, type TestRedis } from './redis.ts';
import { clusterEnv, startServer, type RunningServer } from './server.ts';

export interface TwoNodes {
  a: RunningServer;
  b: RunningServer;
  redis: TestRedis;
  /** The shared database (a test may look into it). */
  databaseUrl: string;
  stop(): Promise<void>;
}

export async function startTwoNodes(
  database: string,
  opts: { lostAfterMs?: number; shared?: Record<string, string>; a?: Record<string, string>; b?: Record<string, string> } = {},
): Promise<TwoNodes> {
  const db = await scratchDatabase(database);
  const redis = await startTestRedis();
  const shared = { ...clusterEnv({ databaseUrl: db.url, redisUrl: redis.url, lostAfterMs: opts.lostAfterMs }), ...opts.shared };
  const a = await startServer({ ...shared, NODE_ID: 'node-a', ...opts.a });
  const b = await startServer({ ...shared, NODE_ID: 'node-b', CREATE_DEV_KEY: 'false', ...opts.b });
  return {
    a,
    b,
    redis,
    databaseUrl: db.url,
    stop: async () => {
      await a.stop();
      await b.stop();
      await redis.stop();
      await db.drop();
    },
  };
}
