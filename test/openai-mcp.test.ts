// MCP tools in an OpenAI Realtime session (`{"type": "mcp", ...}`), against a real MCP server built
// with the official @modelcontextprotocol/sdk (streamable HTTP) on loopback: its tools listed
// (mcp_list_tools item and events), a tool the user's words name called by the offline model with
// the right arguments and its answer used in the reply, approval required (an mcp_approval_request
// the client answers: denied, then approved), a server that is down (a clear failed event, the call
// goes on), and an address the outbound policy refuses. Loopback is allowed here through
// WEBHOOK_ALLOWED_CIDRS, as an operator would allow an internal MCP server.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { realtimeSession } from './helpers/realtimeSession.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

let server: RunningServer;
let mcp: Server;
let mcpUrl: string;
/** The calls the MCP server received, with their arguments and the Authorization header. */
const received: { tool: string; args: unknown; authorization: string | undefined }[] = [];

/** A stateless MCP server: one McpServer and transport per request, as the SDK's example shows. */
function startMcp(): Promise<Server> {
  const http = createServer(async (req, res) => {
    const authorization = req.headers.authorization;
    const tools = new McpServer({ name: 'weather', version: '1.0.0' });
    tools.registerTool('get_weather', { description: 'The weather forecast for a city.', inputSchema: { city: z.string() } }, async ({ city }) => {
      received.push({ tool: 'get_weather', args: { city }, authorization });
      return { content: [{ type: 'text', text: `Sunny and 24 degrees in ${city}` }] };
    });
    tools.registerTool('add_numbers', { description: 'Adds two numbers.', inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) => {
      received.push({ tool: 'add_numbers', args: { a, b }, authorization });
      return { content: [{ type: 'text', text: String(a + b) }] };
    });
    tools.registerTool('get_report', { description: 'A very long report.' }, async () => ({ content: [{ type: 'text', text: 'report line. '.repeat(10_000) }] }));
    tools.registerTool('get_slow_answer', { description: 'Answers after a long while.' }, async () => {
      await new Promise((resolve) => setTimeout(resolve, 4000));
      return { content: [{ type: 'text', text: 'too late' }] };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void tools.close();
    });
    await tools.connect(transport);
    let body = '';
    for await (const chunk of req) body += chunk;
    await transport.handleRequest(req, res, body ? JSON.parse(body) : undefined);
  });
  return new Promise((resolve) => http.listen(0, '127.0.0.1', () => resolve(http)));
}

before(async () => {
  mcp = await startMcp();
  mcpUrl = `http://127.0.0.1:${(mcp.address() as AddressInfo).port}/mcp`;
  server = await startServer({ WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8', MCP_TIMEOUT_MS: '2000', MCP_MAX_OUTPUT_BYTES: '1024' });
});
after(async () => {
  await server?.stop();
  mcp?.closeAllConnections();
  await new Promise((resolve) => mcp?.close(resolve));
});

const session = (tools: object[]) => realtimeSession(server, tools);

const weather = (extra: object = {}) => ({ type: 'mcp', server_label: 'weather', server_url: mcpUrl, headers: { authorization: 'Bearer mcp-secret' }, ...extra });

describe('MCP tools (@modelcontextprotocol/sdk server on loopback)', () => {
  test('listed, then called with the right arguments; the answer is used in the reply', async () => {
    const s = await session([weather({ require_approval: 'never' })]);
    try {
      const listed = await until('the listing', () => s.events.find((e) => e.type === 'mcp_list_tools.completed'), (x) => !!x, 15_000);
      const types = s.events.map((e) => e.type);
      assert.ok(types.indexOf('mcp_list_tools.in_progress') < types.indexOf('mcp_list_tools.completed'));
      const item = await until('the listing item', () => s.events.find((e) => e.type === 'conversation.item.done' && e.item.id === listed.item_id), (x) => !!x);
      assert.deepEqual(item.item.tools.map((t: any) => t.name).sort(), ['add_numbers', 'get_report', 'get_slow_answer', 'get_weather']);
      assert.equal(item.item.tools.find((t: any) => t.name === 'get_weather').input_schema.properties.city.type, 'string');
      const updated = s.events.find((e) => e.type === 'session.updated');
      assert.equal(updated.session.tools[0].headers, null, 'headers are never sent back');

      s.ask('What is the weather like in Paris?');
      const done = await until('the reply', () => s.replies()[0], (x) => !!x, 20_000);
      assert.equal(done.response.status, 'completed');
      const call = done.response.output.find((i: any) => i.type === 'mcp_call');
      assert.equal(call.name, 'get_weather');
      assert.deepEqual(JSON.parse(call.arguments), { city: 'Paris' });
      assert.equal(call.output, 'Sunny and 24 degrees in Paris');
      assert.match(s.text(done), /Sunny and 24 degrees in Paris/);
      for (const t of ['response.mcp_call_arguments.delta', 'response.mcp_call_arguments.done', 'response.mcp_call.in_progress', 'response.mcp_call.completed']) assert.ok(s.events.some((e) => e.type === t), t);
      assert.deepEqual(received.at(-1), { tool: 'get_weather', args: { city: 'Paris' }, authorization: 'Bearer mcp-secret' });

      s.ask('Please add numbers 2 and 40.');
      const sum = await until('the sum', () => s.replies()[1], (x) => !!x, 20_000);
      assert.match(s.text(sum), /42/);
    } finally {
      s.close();
    }
  });

  test('limits: an answer past MCP_MAX_OUTPUT_BYTES is cut, saying so; a call past MCP_TIMEOUT_MS fails and the reply goes on', async () => {
    const s = await session([weather({ require_approval: 'never', allowed_tools: ['get_report', 'get_slow_answer'] })]);
    try {
      await until('the listing', () => s.events.find((e) => e.type === 'mcp_list_tools.completed'), (x) => !!x, 15_000);
      s.ask('Read me the report.');
      const report = await until('the report', () => s.replies()[0], (x) => !!x, 20_000);
      const cut = report.response.output.find((i: any) => i.type === 'mcp_call');
      assert.ok(Buffer.byteLength(cut.output) < 1100, `cut: ${Buffer.byteLength(cut.output)} bytes`);
      assert.match(cut.output, /\[output cut at 1024 bytes\]$/);
      s.ask('I would like the slow answer.');
      const slow = await until('the slow answer', () => s.replies()[1], (x) => !!x, 20_000);
      const failed = slow.response.output.find((i: any) => i.type === 'mcp_call');
      assert.match(failed.error.message, /time/i);
      assert.ok(s.events.some((e) => e.type === 'response.mcp_call.failed'));
      assert.equal(slow.response.status, 'completed');
    } finally {
      s.close();
    }
  });

  test('approval required: an mcp_approval_request; denied, the tool is not called; approved, it is', async () => {
    const s = await session([weather({ allowed_tools: ['get_weather'] })]);
    try {
      await until('the listing', () => s.events.find((e) => e.type === 'mcp_list_tools.completed'), (x) => !!x, 15_000);
      const calls = received.length;
      s.ask('What is the weather in Oslo?');
      const first = await until('the request', () => s.replies()[0], (x) => !!x, 20_000);
      const request = first.response.output.find((i: any) => i.type === 'mcp_approval_request');
      assert.equal(request.name, 'get_weather');
      assert.equal(request.server_label, 'weather');
      assert.ok(!first.response.output.some((i: any) => i.type === 'mcp_call'));

      s.send({ type: 'conversation.item.create', item: { type: 'mcp_approval_response', approval_request_id: request.id, approve: false, reason: 'not now' } });
      s.send({ type: 'response.create' });
      const denied = await until('the answer after the denial', () => s.replies()[1], (x) => !!x, 20_000);
      const refused = denied.response.output.find((i: any) => i.type === 'mcp_call');
      assert.match(refused.error.message, /denied/);
      assert.equal(refused.approval_request_id, request.id);
      assert.equal(received.length, calls, 'the server was not called');

      s.ask('What is the weather in Oslo?');
      const again = await until('a new request', () => s.replies()[2], (x) => !!x, 20_000);
      const second = again.response.output.find((i: any) => i.type === 'mcp_approval_request');
      s.send({ type: 'conversation.item.create', item: { type: 'mcp_approval_response', approval_request_id: second.id, approve: true } });
      s.send({ type: 'response.create' });
      const approved = await until('the answer after the approval', () => s.replies()[3], (x) => !!x, 20_000);
      assert.match(s.text(approved), /Sunny and 24 degrees in Oslo/);
      assert.equal(received.length, calls + 1);
    } finally {
      s.close();
    }
  });

  test('a server that is down, and one the outbound policy refuses: mcp_list_tools.failed saying why; the session goes on', async () => {
    const down = createServer();
    await new Promise<void>((resolve) => down.listen(0, '127.0.0.1', () => resolve()));
    const closedPort = (down.address() as AddressInfo).port;
    await new Promise((resolve) => down.close(resolve));
    const s = await session([
      { type: 'mcp', server_label: 'down', server_url: `http://127.0.0.1:${closedPort}/mcp`, require_approval: 'never' },
      { type: 'mcp', server_label: 'metadata', server_url: 'http://169.254.169.254/mcp', require_approval: 'never' },
    ]);
    try {
      const failed = await until('two failures', () => s.events.filter((e) => e.type === 'mcp_list_tools.failed'), (f) => f.length === 2, 15_000);
      const messages = failed.map((f: any) => f.error.message).join(' | ');
      assert.match(messages, /'down' failed/);
      assert.match(messages, /169\.254\.169\.254 is a cloud metadata address, refused unless WEBHOOK_ALLOWED_CIDRS allows it/);
      s.ask('Hello!');
      const done = await until('a reply all the same', () => s.replies()[0], (x) => !!x, 20_000);
      assert.equal(done.response.status, 'completed');
    } finally {
      s.close();
    }
  });
});
