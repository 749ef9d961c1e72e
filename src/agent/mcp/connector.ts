// Talking to a remote MCP server a session names (OpenAI's `{"type": "mcp"}` tool), with the
// official client (@modelcontextprotocol/sdk) over streamable HTTP: every request bounded in time,
// an answer's text bounded in size, and the server's address held to the outbound policy webhooks
// follow (src/system/outboundPolicy.ts): no internal address unless the operator allows it.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { allowedAddresses, type OutboundGuard } from '../../system/outboundRequest.js';
import type { McpServer } from '../../session/tools.js';

export interface McpToolInfo {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
}

/** One server's session: its tools, and calls of them. */
export interface McpConnection {
  listTools(): Promise<McpToolInfo[]>;
  /** The tool's answer as text (at most `maxOutputBytes`); rejects with what went wrong. */
  callTool(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<string>;
  close(): Promise<void>;
}

export type McpConnector = (server: McpServer) => Promise<McpConnection>;

export interface McpLimits {
  /** Each request (connecting, listing, a call) at most this long. */
  timeoutMs: number;
  /** A call's answer is cut to this many bytes of text. */
  maxOutputBytes: number;
}

/** Text cut to `maxBytes` of UTF-8 (on a character boundary), saying so. */
function bounded(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  const cut = Buffer.from(text).subarray(0, maxBytes).toString('utf8').replace(/\uFFFD$/, '');
  return `${cut} [output cut at ${maxBytes} bytes]`;
}

/** Connections made through `guard`, within `limits`. */
export function mcpConnector(guard: OutboundGuard, limits: McpLimits): McpConnector {
  // Every request the client makes goes to an address the policy allows.
  const guardedFetch: typeof fetch = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    await allowedAddresses(url, guard);
    return fetch(input, { ...init, redirect: 'error' });
  };
  return async (server) => {
    const url = new URL(server.url);
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error(`server_url must be http(s), not ${url.protocol}`);
    const client = new Client({ name: 'parley', version: '1' });
    const transport = new StreamableHTTPClientTransport(url, { fetch: guardedFetch, requestInit: { headers: server.headers ?? {} } });
    const options = { timeout: limits.timeoutMs };
    await client.connect(transport, options);
    return {
      async listTools() {
        const tools: McpToolInfo[] = [];
        let cursor: string | undefined;
        do {
          const page = await client.listTools(cursor ? { cursor } : {}, options);
          for (const t of page.tools) tools.push({ name: t.name, ...(t.description ? { description: t.description } : {}), inputSchema: t.inputSchema as Record<string, unknown> });
          cursor = page.nextCursor;
        } while (cursor && tools.length < 1000);
        return tools;
      },
      async callTool(name, args, signal) {
        const result = await client.callTool({ name, arguments: args }, undefined, { ...options, signal });
        const text = ((result.content ?? []) as { type: string; text?: string }[])
          .map((c) => (c.type === 'text' ? (c.text ?? '') : `[${c.type}]`))
          .join('\n');
        if (result.isError) throw new Error(bounded(text || 'the tool reported an error', limits.maxOutputBytes));
        return bounded(text || JSON.stringify(result.structuredContent ?? ''), limits.maxOutputBytes);
      },
      close: () => client.close(),
    };
  };
}
