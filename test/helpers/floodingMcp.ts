// MCP servers that flood the client, built on the official SDK's server (McpServer over streamable
// HTTP, stateless: one server and transport per request, as the SDK's example does), one per path
// of one HTTP server: a tool list far larger than any client should read (each description 1 MB),
// as an event stream or as JSON; more tools than a session may be offered; a tool whose input schema
// is about 50 KB; tools whose answer is 20 MB of text (as a result and as an error); and, below the SDK, an
// error answer with a body of 40 MB. Also a plain server (one small tool) for address checks. Each
// path counts the requests that reached it.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

const MB = 1024 * 1024;

export interface FloodingMcp {
  /** `http://host:port` */
  origin: string;
  /** Requests received, by path. */
  requests: Map<string, number>;
  /** Bytes of the 40 MB error body the client took before it stopped reading. */
  errorBytesWritten(): number;
  close(): Promise<void>;
}

/** Sizes of the floods (a benchmark takes the issue's: 150 tools of 1 MB). */
export interface FloodSizes {
  listTools: number;
  descriptionBytes: number;
  errorBodyBytes: number;
  callAnswerBytes: number;
}

export const TEST_FLOODS: FloodSizes = { listTools: 8, descriptionBytes: MB, errorBodyBytes: 40 * MB, callAnswerBytes: 20 * MB };

/** The tools each path's server offers. */
function toolsFor(path: string, sizes: FloodSizes): ((server: McpServer) => void) | undefined {
  const ok = async () => ({ content: [{ type: 'text' as const, text: 'fine' }] });
  switch (path) {
    case '/plain':
      return (s) => s.registerTool('get_secret', { description: 'What only the local network should see.' }, async () => ({ content: [{ type: 'text', text: 'the secret' }] }));
    case '/list-flood':
    case '/list-flood-json':
      return (s) => {
        for (let i = 0; i < sizes.listTools; i++) s.registerTool(`tool_${i}`, { description: String.fromCharCode(97 + (i % 26)).repeat(sizes.descriptionBytes) }, ok);
      };
    case '/many-tools':
      return (s) => {
        for (let i = 0; i < 150; i++) s.registerTool(`tool_${i}`, { description: `Tool number ${i}.` }, ok);
      };
    case '/big-schema':
      return (s) => {
        s.registerTool('small_tool', { description: 'A tool of ordinary size.', inputSchema: { city: z.string() } }, ok);
        const fields = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`field_number_${i}`, z.string().describe('A field of a very large form.')]));
        s.registerTool('huge_form', { description: 'A tool whose input schema is about 50 KB.', inputSchema: fields }, ok);
      };
    case '/call-flood':
      return (s) => {
        s.registerTool('get_everything', { description: 'Answers with everything it has.' }, async () => ({ content: [{ type: 'text', text: 'x'.repeat(sizes.callAnswerBytes) }] }));
        s.registerTool('fail_loudly', { description: 'Fails, saying a lot about it.' }, async () => ({ isError: true, content: [{ type: 'text', text: 'e'.repeat(sizes.callAnswerBytes) }] }));
      };
    default:
      return undefined;
  }
}

export async function startFloodingMcp(host: string, sizes: FloodSizes = TEST_FLOODS): Promise<FloodingMcp> {
  const requests = new Map<string, number>();
  let errorBytes = 0;
  const http: Server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '').split('?')[0]!;
    requests.set(path, (requests.get(path) ?? 0) + 1);
    let body = '';
    for await (const chunk of req) body += chunk;
    if (path === '/error-flood') return void errorFlood(res, sizes.errorBodyBytes, (n) => (errorBytes += n));
    const register = toolsFor(path, sizes);
    if (!register) return void res.writeHead(404).end();
    const tools = new McpServer({ name: 'flooding', version: '1.0.0' });
    register(tools);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: path.endsWith('-json') });
    res.on('close', () => {
      void transport.close();
      void tools.close();
    });
    await tools.connect(transport);
    await transport.handleRequest(req, res, body ? JSON.parse(body) : undefined).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => http.listen(0, host, resolve));
  return {
    origin: `http://${host}:${(http.address() as AddressInfo).port}`,
    requests,
    errorBytesWritten: () => errorBytes,
    close: async () => {
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    },
  };
}

/** A 500 whose body is `total` bytes, written a MiB at a time as the client takes it. */
function errorFlood(res: ServerResponse, total: number, wrote: (n: number) => void): void {
  res.writeHead(500, { 'content-type': 'text/plain', 'content-length': String(total) });
  const chunk = Buffer.alloc(MB, 'E');
  let left = total;
  res.on('error', () => {});
  const write = () => {
    while (left > 0 && !res.destroyed) {
      const part = chunk.subarray(0, Math.min(MB, left));
      left -= part.length;
      wrote(part.length);
      if (!res.write(part)) return void res.once('drain', write);
    }
    res.end();
  };
  write();
}
