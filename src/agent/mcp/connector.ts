// Talking to a remote MCP server a session names (OpenAI's `{"type": "mcp"}` tool), with the
// official client (@modelcontextprotocol/sdk) over streamable HTTP. The server is the session's to
// choose, so it is held as a webhook receiver is (src/system/outboundRequest.ts): every request
// goes to an address the outbound policy allows, the very address that was checked (never one a
// second DNS lookup gives), and is bounded in time; each answer is read up to a bound (an error's
// body to a few hundred bytes), never whole; and what a session may be offered of its tools is
// bounded as OpenAI bounds a request's functions.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { AnswerTooLarge, outboundFetch, type OutboundGuard } from '../../system/outboundRequest.js';
import type { McpServer } from '../../session/tools.js';

export interface McpToolInfo {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
}

/** One server's session: its tools, and calls of them. */
export interface McpConnection {
  /** The tools `allowed` lets through, each within MCP_TOOL_LIMITS; rejects when they are past them. */
  listTools(allowed: (name: string) => boolean): Promise<McpToolInfo[]>;
  /** The tool's answer as text (at most `maxOutputBytes`); rejects with what went wrong. */
  callTool(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<string>;
  close(): Promise<void>;
}

export type McpConnector = (server: McpServer) => Promise<McpConnection>;

export interface McpLimits {
  /** Each request (connecting, listing its tools, a call) at most this long. */
  timeoutMs: number;
  /** A call's answer is cut to this many bytes of text. */
  maxOutputBytes: number;
  /** Each answer of the server (a page of its tool list, a call's result) is read to this many bytes at most; past them it fails. */
  maxResponseBytes: number;
}

/**
 * What a session is offered of its MCP servers' tools: at most 128 (all its servers together, as
 * OpenAI takes at most 128 functions in a request), each named in at most 128 characters and
 * described in at most 8,192 (the session's own function tools' bounds), its input schema at most
 * 16 KiB of JSON.
 */
export const MCP_TOOL_LIMITS = { tools: 128, nameChars: 128, descriptionChars: 8192, schemaBytes: 16 * 1024 };
/** An error answer's body is read to this many bytes, and any error's text is cut to them. */
export const MCP_ERROR_TEXT_BYTES = 512;
/** Tools of a server's list looked at, at most (its pages are read until then). */
const MAX_TOOLS_LISTED = 1000;

/** Text cut to `maxBytes` of UTF-8 (on a character boundary), saying so. */
function bounded(text: string, maxBytes: number, what = 'output'): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  const cut = Buffer.from(text).subarray(0, maxBytes).toString('utf8').replace(/\uFFFD$/, '');
  return `${cut} [${what} cut at ${maxBytes} bytes]`;
}

/** An error as the session is told of it: an answer past the bound said as such, any text cut short. */
function described(err: unknown): Error {
  if (err instanceof AnswerTooLarge) return new Error(`the MCP server's answer is larger than ${err.limit} bytes (MCP_MAX_RESPONSE_BYTES); it was not read further`);
  return new Error(bounded(err instanceof Error ? err.message : String(err), MCP_ERROR_TEXT_BYTES, 'message'));
}

/** The tool as offered, or why it may not be. */
function checkedTool(t: { name: string; description?: string; inputSchema: unknown }): McpToolInfo {
  const { nameChars, descriptionChars, schemaBytes } = MCP_TOOL_LIMITS;
  if (t.name.length > nameChars) throw new Error(`a tool's name is ${t.name.length} characters, more than ${nameChars}`);
  if ((t.description?.length ?? 0) > descriptionChars) throw new Error(`the description of '${t.name}' is ${t.description!.length} characters, more than ${descriptionChars}`);
  const schema = Buffer.byteLength(JSON.stringify(t.inputSchema));
  if (schema > schemaBytes) throw new Error(`the input schema of '${t.name}' is ${schema} bytes, more than ${schemaBytes}`);
  return { name: t.name, ...(t.description ? { description: t.description } : {}), inputSchema: t.inputSchema as Record<string, unknown> };
}

/** Connections made through `guard`, within `limits`. */
export function mcpConnector(guard: OutboundGuard, limits: McpLimits): McpConnector {
  return async (server) => {
    const url = new URL(server.url);
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error(`server_url must be http(s), not ${url.protocol}`);
    // Requests waiting for an answer: an answer past its bound ends them at once (an event stream's
    // reader in the SDK would only report it, and the request would wait for its timeout).
    const inFlight = new Set<AbortController>();
    const guarded = outboundFetch(guard, { maxBodyBytes: limits.maxResponseBytes, maxErrorBytes: MCP_ERROR_TEXT_BYTES, timeoutMs: limits.timeoutMs }, (err) => {
      for (const request of inFlight) request.abort(err);
    });
    // No stream of the server's own messages (GET): Parley asks nothing of a server but its tools
    // and their calls, whose answers come with the requests. 405 is how a server says it has none.
    const fetchFn: typeof fetch = async (input, init) => ((init?.method ?? 'GET').toUpperCase() === 'GET' ? new Response(null, { status: 405 }) : guarded(input, init));
    const client = new Client({ name: 'parley', version: '1' });
    const transport = new StreamableHTTPClientTransport(url, { fetch: fetchFn, requestInit: { headers: server.headers ?? {} } });
    const options = { timeout: limits.timeoutMs };

    /** `request`, ended by `outer` or by an answer past its bound; its error as the session is told of it. */
    const run = async <T>(request: (signal: AbortSignal) => Promise<T>, outer?: AbortSignal): Promise<T> => {
      const own = new AbortController();
      inFlight.add(own);
      try {
        return await request(outer ? AbortSignal.any([outer, own.signal]) : own.signal);
      } catch (err) {
        throw described(own.signal.aborted ? own.signal.reason : err);
      } finally {
        inFlight.delete(own);
      }
    };

    await run((signal) => client.connect(transport, { ...options, signal })).catch(async (err: unknown) => {
      await client.close().catch(() => {});
      throw err;
    });
    return {
      async listTools(allowed) {
        const tools: McpToolInfo[] = [];
        let offered = 0;
        let looked = 0;
        let cursor: string | undefined;
        // Its pages together within the time a request has.
        const deadline = AbortSignal.timeout(limits.timeoutMs);
        do {
          const page = await run((signal) => client.listTools(cursor ? { cursor } : {}, { ...options, signal }), deadline);
          for (const t of page.tools) {
            looked++;
            if (!allowed(t.name)) continue;
            offered++;
            const tool = checkedTool(t);
            if (tools.length < MCP_TOOL_LIMITS.tools) tools.push(tool);
          }
          cursor = page.nextCursor;
        } while (cursor && looked < MAX_TOOLS_LISTED);
        if (offered > MCP_TOOL_LIMITS.tools) {
          throw new Error(`it offers ${offered} tools, more than the ${MCP_TOOL_LIMITS.tools} a session may be offered; name the ones to use in allowed_tools`);
        }
        return tools;
      },
      async callTool(name, args, signal) {
        const result = await run((s) => client.callTool({ name, arguments: args }, undefined, { ...options, signal: s }), signal);
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
