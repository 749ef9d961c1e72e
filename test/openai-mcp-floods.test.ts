// MCP servers that attack the node (issue 44, items 2 and 3), through a real OpenAI Realtime session
// over the WebSocket and real MCP servers built on the official SDK (helpers/floodingMcp.ts):
// - a server's name that the checked resolver (WEBHOOK_DNS_SERVERS, a local one here) and the
//   system's resolve differently (DNS rebinding: `localhost` checked as 192.0.2.1): the node must
//   connect to the address it checked, never reaching the loopback server behind the name;
// - Parley's own listeners (its HTTP port, its node-to-node listener), on an address the operator
//   allowed: refused, their answers never read;
// - a tool list of 1 MB descriptions (as an event stream and as JSON), a 40 MB error body, 20 MB tool
//   answers: read up to a bound, never whole; the error quoted in a few hundred bytes; the session
//   goes on (it was cut off `client_too_slow` by a 40 MB failed event);
// - more tools than a session may be offered, and a 50 KB input schema: the listing says so.
// Parley listens on 127.0.0.2, which WEBHOOK_ALLOWED_CIDRS allows (the flooding servers are there);
// 127.0.0.1, where the rebinding victim listens, is not allowed. Figures: bench/mcp-floods.ts.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { freePort } from './helpers/coturn.ts';
import { DnsServer } from './helpers/dnsServer.ts';
import { startFloodingMcp, TEST_FLOODS, type FloodingMcp } from './helpers/floodingMcp.ts';
import { realtimeSession, type RealtimeSession } from './helpers/realtimeSession.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

let server: RunningServer;
let dns: DnsServer;
let floods: FloodingMcp;
let victim: FloodingMcp;
let internalPort: number;

before(async () => {
  dns = await new DnsServer().start();
  floods = await startFloodingMcp('127.0.0.2');
  victim = await startFloodingMcp('127.0.0.1');
  internalPort = await freePort();
  server = await startServer({
    HOST: '127.0.0.2',
    INTERNAL_HOST: '127.0.0.2',
    INTERNAL_PORT: String(internalPort),
    WEBHOOK_ALLOWED_CIDRS: '127.0.0.2/32',
    WEBHOOK_DNS_SERVERS: dns.address,
    MCP_TIMEOUT_MS: '5000',
    TURN_ENABLED: 'false',
  });
});
after(async () => {
  await server?.stop();
  await floods?.close();
  await victim?.close();
  await dns?.stop();
});

const mcp = (label: string, url: string, extra: object = {}) => ({ type: 'mcp', server_label: label, server_url: url, require_approval: 'never', ...extra });

/** The listing's outcome for each label: its mcp_list_tools.completed or .failed event (with the item's tools). */
async function listings(s: RealtimeSession, labels: string[]): Promise<Map<string, { failed?: string; tools?: string[] }>> {
  const settled = await until(
    'the listings',
    () => s.events.filter((e) => e.type === 'conversation.item.done' && e.item.type === 'mcp_list_tools'),
    (done) => done.length === labels.length,
    60_000,
  );
  const out = new Map<string, { failed?: string; tools?: string[] }>();
  for (const done of settled) {
    const failed = s.events.find((e) => e.type === 'mcp_list_tools.failed' && e.item_id === done.item.id);
    out.set(done.item.server_label, failed ? { failed: failed.error.message } : { tools: done.item.tools.map((t: any) => t.name) });
  }
  return out;
}

/** A reply after the floods: the session is alive and answers. */
async function stillAnswers(s: RealtimeSession) {
  const before = s.replies().length;
  s.ask('Hello!');
  const done = await until('a reply', () => s.replies()[before], (x) => !!x, 30_000);
  assert.equal(done.response.status, 'completed');
  assert.equal(s.closed(), undefined, `the session was not cut off: ${JSON.stringify(s.closed())}`);
}

describe('MCP servers that attack the node', () => {
  test('DNS rebinding: the name is checked as 192.0.2.1; the connection goes there, never to the loopback server the system resolver names', async () => {
    dns.records.set('localhost', '192.0.2.1');
    const port = new URL(victim.origin).port;
    const s = await realtimeSession(server, [mcp('rebound', `http://localhost:${port}/plain`)]);
    try {
      const outcome = (await listings(s, ['rebound'])).get('rebound')!;
      assert.ok(dns.asked.includes('localhost'), 'the checked resolver was asked');
      // Before: the listing completed with the loopback server's get_secret.
      assert.ok(outcome.failed, `the listing failed: ${JSON.stringify(outcome)}`);
      // Refused there at once, or (where 192.0.2.1 swallows packets) no answer within MCP_TIMEOUT_MS.
      assert.match(outcome.failed, /192\.0\.2\.1|timeout/i);
      assert.deepEqual([...victim.requests], [], 'the loopback server got nothing');
    } finally {
      s.close();
    }
  });

  test("Parley's own listeners (its HTTP port, its node-to-node listener) are refused on an allowed address, their answers never read", async () => {
    const publicPort = new URL(server.baseUrl).port;
    const s = await realtimeSession(server, [mcp('itself', `http://127.0.0.2:${publicPort}/mcp`), mcp('internal', `http://127.0.0.2:${internalPort}/mcp`)]);
    try {
      const outcome = await listings(s, ['itself', 'internal']);
      for (const [label, port] of [['itself', publicPort], ['internal', String(internalPort)]] as const) {
        const { failed } = outcome.get(label)!;
        // Before: the HTTP port's 404 body (and the node-to-node listener's) in the message.
        assert.match(failed ?? '', new RegExp(`127\\.0\\.0\\.2 port ${port} is one of Parley's own listeners`), label);
        assert.doesNotMatch(failed!, /Route|not found|node_authentication/i, label);
      }
    } finally {
      s.close();
    }
  });

  test(`a tool list of ${TEST_FLOODS.listTools} × 1 MB descriptions, as an event stream and as JSON: read to the bound, the listing fails saying so; the session goes on`, async () => {
    const s = await realtimeSession(server, [mcp('stream', `${floods.origin}/list-flood`), mcp('json', `${floods.origin}/list-flood-json`)]);
    try {
      const outcome = await listings(s, ['stream', 'json']);
      for (const label of ['stream', 'json']) {
        const { failed } = outcome.get(label)!;
        assert.match(failed ?? '', /answer is larger than 1048576 bytes \(MCP_MAX_RESPONSE_BYTES\)/, `${label}: ${failed?.slice(0, 300)}`);
        assert.ok(Buffer.byteLength(failed!) < 1024, `${label}: ${Buffer.byteLength(failed!)} bytes`);
      }
      await stillAnswers(s);
    } finally {
      s.close();
    }
  });

  test('a 40 MB error body: a few hundred bytes of it are read and quoted; the session is not cut off', async () => {
    const s = await realtimeSession(server, [mcp('loud', `${floods.origin}/error-flood`)]);
    try {
      const { failed } = (await listings(s, ['loud'])).get('loud')!;
      assert.match(failed ?? '', /EEEE/, 'the body is quoted');
      // Before: all 40 MB in the failed event, and the session ended client_too_slow.
      assert.ok(Buffer.byteLength(failed!) < 1024, `${Buffer.byteLength(failed!)} bytes`);
      await stillAnswers(s);
      assert.ok(floods.errorBytesWritten() < TEST_FLOODS.errorBodyBytes, `the server could write only ${floods.errorBytesWritten()} bytes`);
    } finally {
      s.close();
    }
  });

  test('more tools than a session may be offered, and a 50 KB input schema: the listing fails saying which; allowed_tools naming small tools lists them', async () => {
    const s = await realtimeSession(server, [
      mcp('many', `${floods.origin}/many-tools`),
      mcp('huge', `${floods.origin}/big-schema`),
      mcp('small', `${floods.origin}/big-schema`, { allowed_tools: ['small_tool'] }),
    ]);
    try {
      const outcome = await listings(s, ['many', 'huge', 'small']);
      assert.match(outcome.get('many')!.failed ?? '', /150 tools, more than the 128/);
      assert.match(outcome.get('huge')!.failed ?? '', /input schema of 'huge_form' is \d+ bytes, more than 16384/);
      assert.deepEqual(outcome.get('small'), { tools: ['small_tool'] });
      await stillAnswers(s);
    } finally {
      s.close();
    }
  });

  test('tool answers of 20 MB, a result and an error: the call fails at the bound saying so; the reply goes on', async () => {
    const s = await realtimeSession(server, [mcp('calls', `${floods.origin}/call-flood`)]);
    try {
      assert.deepEqual((await listings(s, ['calls'])).get('calls'), { tools: ['get_everything', 'fail_loudly'] });
      for (const [i, question] of ['Tell me everything.', 'Please fail loudly.'].entries()) {
        s.ask(question);
        const done = await until('the reply', () => s.replies()[i], (x) => !!x, 60_000);
        const call = done.response.output.find((o: any) => o.type === 'mcp_call');
        assert.ok(call, `${question}: ${JSON.stringify(done.response.output).slice(0, 500)}`);
        assert.match(call.error?.message ?? '', /answer is larger than 1048576 bytes/, question);
        assert.ok(Buffer.byteLength(JSON.stringify(call)) < 2048, question);
        assert.equal(done.response.status, 'completed');
      }
      await stillAnswers(s);
    } finally {
      s.close();
    }
  });
});
