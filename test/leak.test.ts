// Every call's resources are released when it ends. The server runs with --expose-gc, so each
// /metrics scrape forces a full collection before counting live CallSession objects
// (parley_call_sessions_alive, a FinalizationRegistry count): after a few hundred calls placed and
// hung up it must come back to 0, and the resident memory must not grow with the number of calls.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { openCall } from './helpers/rtcClient.ts';
import { metric, mintToken, startServer, type RunningServer, NO_RATE_LIMITS, NO_CALL_LIMITS } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

/**
 * Growth allowed in the memory outside V8's heap over each half of the measured calls, after a
 * warm-up and a forced GC: a guard against native memory kept per call (JS retention is what the
 * session count catches; a leaked session costs only about 9 KB of JS heap). The leak this guard was
 * written for was reported at +14-27 MB per 200-300 calls: 7-13 MB a half. Without a leak the whole
 * RSS moved by -36 to +22 MB per 300 calls (V8 growing or giving back heap, and one-off steps).
 */
const HALF_BOUND_MB = 6;

/** Places `count` calls one after the other (echo and voice agent alternately), each connected, then hung up. */
async function placeAndHangUp(server: RunningServer, count: number): Promise<void> {
  let token = '';
  for (let i = 0; i < count; i++) {
    if (i % 50 === 0) token = await mintToken(server.baseUrl, server.devKey);
    const client = await openCall(server.baseUrl, token, { params: { model: i % 2 ? 'orga-1-beta' : 'audio-echo' } });
    try {
      await client.waitConnected();
      await client.nextEvent('session.created');
    } finally {
      client.close();
    }
  }
  await until('every call to end', () => metric(server.baseUrl, 'parley_active_calls'), (n) => n === 0, 30_000);
}

/**
 * The process's memory outside V8's heap (resident set less the heap V8 holds), from one /metrics
 * scrape (which forces a full GC first): what a native resource kept per call would grow. The
 * whole resident set moved by ±20 MB between runs without a leak as V8 grew or gave back heap.
 */
async function nativeMemoryMb(server: RunningServer): Promise<{ rss: number; heap: number; native: number }> {
  const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
  const read = (name: string) => {
    const value = new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1];
    assert.ok(value, `${name} on /metrics`);
    return Number(value) / 1e6;
  };
  const rss = read('parley_process_resident_memory_bytes');
  const heap = read('parley_nodejs_heap_size_total_bytes');
  return { rss, heap, native: rss - heap };
}

const allCollected = (server: RunningServer) =>
  until('every call session to be collected', () => metric(server.baseUrl, 'parley_call_sessions_alive'), (n) => n === 0, 30_000);

for (const [stack, calls] of [
  ['libdatachannel', 300],
  ['werift', 100],
] as const) {
  describe(`call sessions are released (${stack})`, () => {
    let server: RunningServer;
    before(async () => {
      // Two malloc arenas rather than one per thread that ever allocated: memory freed by the media
      // threads then goes back to pools the next calls reuse, so what stays is what was kept.
      server = await startServer({ WEBRTC_STACK: stack, ...NO_RATE_LIMITS, ...NO_CALL_LIMITS, MALLOC_ARENA_MAX: '2' }, ['--expose-gc']);
    });
    after(async () => {
      await server?.stop();
    });

    test(`${calls} calls placed and hung up leave no session alive; memory outside the heap does not grow with them`, async (t) => {
      await placeAndHangUp(server, 30);
      await allCollected(server);
      // Measured at the start, halfway and at the end: memory kept per call grows both halves; a
      // one-off (a worker thread's heap, a malloc arena, seen as +16 MB in one run of two) grows one.
      const half = calls / 2;
      const before = await nativeMemoryMb(server);
      const started = Date.now();
      await placeAndHangUp(server, half);
      await allCollected(server);
      const middle = await nativeMemoryMb(server);
      await placeAndHangUp(server, calls - half);
      await allCollected(server);
      const after = await nativeMemoryMb(server);
      const halves = [middle.native - before.native, after.native - middle.native];
      const mb = (n: number) => `${n >= 0 ? '+' : ''}${n.toFixed(1)}`;
      t.diagnostic(`${stack}: ${calls} calls in ${((Date.now() - started) / 1000).toFixed(1)} s; sessions alive after: 0; outside the heap ${before.native.toFixed(1)} → ${middle.native.toFixed(1)} → ${after.native.toFixed(1)} MB (${halves.map(mb).join(', ')}); RSS ${mb(after.rss - before.rss)}, V8 heap ${mb(after.heap - before.heap)} MB`);
      assert.ok(Math.min(...halves) < HALF_BOUND_MB, `memory outside the V8 heap grew in both halves: ${halves.map(mb).join(' and ')} MB over ${half} calls each`);
    });
  });
}
