// The node's picture decoder under one tenant's flood (issue 44 item 6, issue 43 item 8), through
// real OpenAI Realtime sessions over the WebSocket: key A's ten sessions each send a PNG bomb (8000²
// pixels of one colour, ≈ 190 KB) while key B sends an ordinary 17 KB JPEG. The decoder is shared
// fairly per key: A gets its own bound (server_busy past it), B's picture is decoded and answered,
// nothing is a 5xx or invalid_image, /healthz answers throughout. And a decode that runs past
// VISION_DECODE_TIMEOUT_MS is server_busy, not invalid_image (a tiny timeout drives it).
// Figures of the same flood, before and after: bench/picture-floods.ts. It asserts no time (bounds
// are generous, outcomes are counted), so it runs among the parallel files.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { imageItem, ordinaryJpeg, outcomeOf, pictureFlood } from './helpers/pictureFlood.ts';
import { realtimeSession } from './helpers/realtimeSession.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

/** A key holds one of the two decode slots and may have four pictures waiting: of ten bombs sent at once, five are refused at once. */
const BOMBS = 10;
const REFUSED_AT_ONCE = BOMBS - 1 - 4;

describe('one key floods the picture decoder', () => {
  let server: RunningServer;
  let otherKey: string;

  before(async () => {
    // A generous timeout: a loaded machine must not turn the bombs or the photo into timeouts here.
    server = await startServer({ TURN_ENABLED: 'false', VISION_DECODE_TIMEOUT_MS: '60000' });
    const created = await server.cli('keys', 'create', '--name', 'tenant-b');
    otherKey = /key:\s+(sk_parley_ai_\w+)/.exec(created.stdout)![1]!;
  });
  after(() => server?.stop());

  test("ten PNG bombs from key A: A is told server_busy past its own bound, key B's JPEG is decoded and answered, /healthz answers throughout", async (t) => {
    const report = await pictureFlood(server, {
      attackerKey: server.devKey,
      victimKey: otherKey,
      bombs: BOMBS,
      // B's picture comes once A's flood is in: the bombs past A's bound have been refused.
      beforeVictim: async (attacker) => {
        await until('A refused past its bound', () => attacker.filter((s, i) => outcomeOf(s, `bomb-${i}`) === 'server_error/server_busy').length, (n) => n >= REFUSED_AT_ONCE, 120_000);
      },
    });
    t.diagnostic(JSON.stringify(report));
    assert.equal(report.victim.outcome, 'added', "B's photo is decoded into its item");
    assert.match(report.victim.reply, /\bblue\b/, "B's question about its photo is answered");
    assert.deepEqual(
      [...report.attacker].sort(),
      [...Array(BOMBS - REFUSED_AT_ONCE).fill('added'), ...Array(REFUSED_AT_ONCE).fill('server_error/server_busy')],
      "A's bombs within its bound are decoded, the rest refused server_busy (none invalid_image, no other error)",
    );
    assert.equal(report.healthzFailures, 0, '/healthz answered 200 every time');
    assert.ok(report.maxDecoders <= 2, `at most VISION_DECODE_CONCURRENCY (2) ffmpeg processes at once: ${report.maxDecoders}`);
  });
});

describe('a decode that times out', () => {
  let server: RunningServer;
  before(async () => {
    // 10 ms: not even an ffmpeg process starts within it.
    server = await startServer({ TURN_ENABLED: 'false', VISION_DECODE_TIMEOUT_MS: '10' });
  });
  after(() => server?.stop());

  test('is server_busy (the server, not the picture), and the session goes on', async () => {
    const s = await realtimeSession(server, []);
    try {
      s.send({ type: 'conversation.item.create', event_id: 'photo', item: imageItem('image/jpeg', ordinaryJpeg(), 'What colour is this?') });
      s.send({ type: 'conversation.item.create', event_id: 'then', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hello' }] } });
      const outcome = await until('the photo refused', () => outcomeOf(s, 'photo'), (o) => o !== undefined, 60_000);
      assert.equal(outcome, 'server_error/server_busy');
      const error = s.events.find((e) => e.type === 'error' && e.error.event_id === 'photo');
      assert.match(error.error.message, /took longer than 10 ms on this server/);
      assert.doesNotMatch(error.error.message, /could not be read as an image/);
      await until('the next item added', () => s.events.some((e) => e.type === 'conversation.item.added' && e.item.content?.[0]?.text === 'hello'), (x) => x, 30_000);
    } finally {
      s.close();
    }
  });
});
