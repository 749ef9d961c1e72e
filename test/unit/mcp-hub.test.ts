// A session's MCP servers (src/agent/mcp/hub.ts) with a fake connector the test drives: at most
// four listed at once; only the tools allowed_tools lets through are asked for and kept (a change of
// allowed_tools lists the server again); all servers together offer at most 128 tools (a listing
// past that fails, saying so); a server dropped while it connects has its connection closed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MCP_TOOL_LIMITS, type McpConnection, type McpConnector, type McpToolInfo } from '../../src/agent/mcp/connector.ts';
import { McpHub } from '../../src/agent/mcp/hub.ts';
import type { McpServer } from '../../src/session/tools.ts';
import { fakeContext, settle } from '../helpers/agentFakes.ts';

/** A connector whose connections the test opens one by one; each server offers `toolsOf(url)`. */
function fakeConnector(toolsOf: (url: string) => string[]) {
  const pending: { server: McpServer; open: () => void }[] = [];
  const closed: string[] = [];
  const asked: string[][] = [];
  const connect: McpConnector = (server) =>
    new Promise<McpConnection>((resolve) => {
      pending.push({
        server,
        open: () =>
          resolve({
            listTools: async (allowed) => {
              const names = toolsOf(server.url).filter(allowed);
              asked.push(names);
              return names.map((name): McpToolInfo => ({ name, inputSchema: { type: 'object' } }));
            },
            callTool: async () => 'ok',
            close: async () => void closed.push(server.label),
          }),
      });
    });
  return { connect, pending, closed, asked };
}

const server = (label: string, extra: Partial<McpServer> = {}): McpServer => ({ label, url: `https://${label}.example/mcp`, requireApproval: 'never', ...extra });
const failures = (events: any[]) => events.filter((e) => e.type === 'mcp.list_tools' && e.phase === 'failed').map((e) => e.message as string);

test('at most four servers are listed at once; the others wait their turn', async () => {
  const fake = fakeConnector(() => ['a_tool']);
  const { ctx } = fakeContext();
  const hub = new McpHub(ctx, fake.connect);
  hub.sync(['s1', 's2', 's3', 's4', 's5', 's6'].map((l) => server(l)));
  await settle(() => fake.pending.length === 4, 'four connecting');
  await new Promise((r) => setImmediate(r));
  assert.equal(fake.pending.length, 4, 'the fifth waits');
  fake.pending[0]!.open();
  await settle(() => fake.pending.length === 5, 'the fifth connecting once the first is listed');
  for (const p of fake.pending.slice(1)) p.open();
  await settle(() => fake.pending.length === 6, 'the sixth');
  fake.pending[5]!.open();
  await hub.ready();
  hub.close();
});

test('only allowed tools are asked for and kept; a change of allowed_tools lists the server again', async () => {
  const fake = fakeConnector(() => ['get_weather', 'get_secret']);
  const { ctx } = fakeContext();
  const hub = new McpHub(ctx, fake.connect);
  hub.sync([server('w', { allowedTools: ['get_weather'] })]);
  await settle(() => fake.pending.length === 1, 'connecting');
  fake.pending[0]!.open();
  await hub.ready();
  assert.deepEqual(fake.asked, [['get_weather']]);
  assert.deepEqual(hub.tools().map((t) => t.name), ['get_weather']);
  hub.sync([server('w', { allowedTools: ['get_weather', 'get_secret'] })]);
  await settle(() => fake.pending.length === 2, 'listed again');
  fake.pending[1]!.open();
  await hub.ready();
  assert.deepEqual(hub.tools().map((t) => t.name), ['get_weather', 'get_secret']);
  assert.deepEqual(fake.closed, ['w'], 'the earlier connection closed');
  hub.close();
});

test(`all servers together offer at most ${MCP_TOOL_LIMITS.tools} tools: the listing that would pass it fails, saying so`, async () => {
  const fake = fakeConnector((url) => Array.from({ length: 100 }, (_, i) => `${new URL(url).hostname.split('.')[0]}_${i}`));
  const { ctx, events } = fakeContext();
  const hub = new McpHub(ctx, fake.connect);
  hub.sync([server('first'), server('second')]);
  await settle(() => fake.pending.length === 2, 'connecting');
  fake.pending[0]!.open();
  await settle(() => hub.tools().length === 100, 'the first listed');
  fake.pending[1]!.open();
  await hub.ready();
  assert.equal(hub.tools().length, 100, "the second's tools are not offered");
  assert.deepEqual(failures(events), ["Listing the tools of 'second' failed: with it the session's MCP servers would offer 200 tools, more than the 128 a session may be offered; name the ones to use in allowed_tools"]);
  hub.close();
});

test('a server dropped while it connects has its connection closed, and its listing fails', async () => {
  const fake = fakeConnector(() => ['a_tool']);
  const { ctx, events } = fakeContext();
  const hub = new McpHub(ctx, fake.connect);
  hub.sync([server('gone')]);
  await settle(() => fake.pending.length === 1, 'connecting');
  hub.sync([]);
  fake.pending[0]!.open();
  await settle(() => fake.closed.length === 1, 'closed');
  assert.deepEqual(fake.closed, ['gone']);
  assert.match(failures(events)[0] ?? '', /no longer names it/);
  assert.deepEqual(hub.tools(), []);
});
