// A call's MCP servers (the session's `{"type": "mcp"}` tools): each is listed when the session
// names it (mcp_list_tools item and events), its allowed tools offered to the model beside the
// client's functions, and the model's calls of them made here — after the client's approval when
// the server requires one (mcp_approval_request / mcp_approval_response items).
import { newItemId, type McpListToolsItem } from '../../session/conversation.js';
import type { McpServer, ToolDefinition } from '../../session/tools.js';
import { Semaphore } from '../../system/semaphore.js';
import type { AgentContext } from '../types.js';
import { MCP_TOOL_LIMITS, type McpConnection, type McpConnector, type McpToolInfo } from './connector.js';

interface Listed {
  server: McpServer;
  /** Settles when its tools are listed (or listing failed). */
  ready: Promise<void>;
  tools: McpToolInfo[];
  connection?: McpConnection;
}

/** What becomes of a call the model makes: made, asked for first, or refused by the client. */
export type McpDecision = { kind: 'call'; approvalRequestId: string | null } | { kind: 'ask' } | { kind: 'denied'; approvalRequestId: string; reason: string };

// Only the allowed tools are listed (and kept): a change of allowed_tools lists the server again.
const keyOf = (s: McpServer) => `${s.label}\n${s.url}\n${JSON.stringify(s.headers ?? {})}\n${JSON.stringify(s.allowedTools ?? null)}`;

/** Servers of one session listed at once: each answer may be as large as MCP_MAX_RESPONSE_BYTES. */
const LISTINGS_AT_ONCE = 4;

export class McpHub {
  private readonly servers = new Map<string, Listed>();
  /** Approvals already used by a call (each approves one call). */
  private readonly usedApprovals = new Set<string>();
  private readonly listing = new Semaphore(LISTINGS_AT_ONCE);

  constructor(
    private readonly ctx: AgentContext,
    private readonly connect: McpConnector | undefined,
  ) {}

  /** The session's servers now: new ones are listed, dropped ones closed. */
  sync(servers: readonly McpServer[]): void {
    const wanted = new Map(servers.map((s) => [keyOf(s), s]));
    for (const [key, listed] of this.servers) {
      if (wanted.has(key)) listed.server = wanted.get(key)!;
      else {
        this.servers.delete(key);
        void listed.connection?.close().catch(() => {});
      }
    }
    for (const [key, server] of wanted) if (!this.servers.has(key)) this.servers.set(key, this.list(server));
  }

  /** Settles when every server named so far has been listed. */
  ready(): Promise<unknown> {
    return Promise.allSettled([...this.servers.values()].map((l) => l.ready));
  }

  /** The tools offered to the model: each server's allowed ones (a name taken by an earlier one is skipped). */
  tools(): ToolDefinition[] {
    const seen = new Set<string>();
    const out: ToolDefinition[] = [];
    for (const { tools } of this.servers.values()) {
      for (const t of tools) {
        if (seen.has(t.name)) continue;
        seen.add(t.name);
        out.push({ name: t.name, ...(t.description ? { description: t.description } : {}), parameters: t.inputSchema });
      }
    }
    return out;
  }

  /** The server whose tool `name` is, when it is one of the offered. */
  serverOf(name: string): McpServer | undefined {
    for (const { server, tools } of this.servers.values()) if (tools.some((t) => t.name === name)) return server;
    return undefined;
  }

  /** Whether the call may be made now, must be asked for, or was refused (the client's latest answer for that tool). */
  decide(server: McpServer, name: string): McpDecision {
    const rule = server.requireApproval;
    if (rule === 'never' || (typeof rule === 'object' && rule.never.includes(name))) return { kind: 'call', approvalRequestId: null };
    const items = this.ctx.conversation.items;
    for (let i = items.length - 1; i >= 0; i--) {
      const answer = items[i]!;
      if (answer.type !== 'mcp_approval_response' || this.usedApprovals.has(answer.approvalRequestId)) continue;
      const asked = items.find((r) => r.id === answer.approvalRequestId);
      if (asked?.type !== 'mcp_approval_request' || asked.serverLabel !== server.label || asked.name !== name) continue;
      this.usedApprovals.add(answer.approvalRequestId);
      return answer.approve ? { kind: 'call', approvalRequestId: answer.approvalRequestId } : { kind: 'denied', approvalRequestId: answer.approvalRequestId, reason: answer.reason ?? 'The user declined the call.' };
    }
    return { kind: 'ask' };
  }

  /** Calls the tool; the answer's text, or a rejection saying what went wrong. */
  async call(server: McpServer, name: string, args: string, signal: AbortSignal): Promise<string> {
    const listed = this.servers.get(keyOf(server));
    if (!listed?.connection) throw new Error(`the MCP server '${server.label}' is not connected`);
    let parsed: unknown;
    try {
      parsed = args.trim() ? JSON.parse(args) : {};
    } catch {
      throw new Error('the arguments are not valid JSON');
    }
    return listed.connection.callTool(name, (parsed && typeof parsed === 'object' ? parsed : {}) as Record<string, unknown>, signal);
  }

  close(): void {
    for (const listed of this.servers.values()) void listed.connection?.close().catch(() => {});
    this.servers.clear();
  }

  private list(server: McpServer): Listed {
    const { ctx } = this;
    const item: McpListToolsItem = { id: newItemId(), type: 'mcp_list_tools', status: 'in_progress', serverLabel: server.label, tools: [] };
    const placed = ctx.conversation.add(item);
    const previousItemId = placed.ok ? placed.previousItemId : null;
    ctx.emit({ type: 'item.added', item: structuredClone(item), previousItemId });
    ctx.emit({ type: 'mcp.list_tools', phase: 'in_progress', itemId: item.id });
    const listed: Listed = { server, tools: [], ready: Promise.resolve() };
    const key = keyOf(server);
    listed.ready = (async () => {
      const release = await this.listing.acquire();
      try {
        if (!this.connect) throw new Error('MCP tools are not available on this server');
        const connection = await this.connect(server);
        // Dropped meanwhile (a session.update, or the call's end): nothing else would close it.
        if (this.servers.get(key) !== listed) {
          void connection.close().catch(() => {});
          throw new Error('the session no longer names it');
        }
        listed.connection = connection;
        const tools = await listed.connection.listTools((name) => !server.allowedTools || server.allowedTools.includes(name));
        const others = [...this.servers.values()].reduce((n, l) => n + (l === listed ? 0 : l.tools.length), 0);
        if (others + tools.length > MCP_TOOL_LIMITS.tools) {
          throw new Error(`with it the session's MCP servers would offer ${others + tools.length} tools, more than the ${MCP_TOOL_LIMITS.tools} a session may be offered; name the ones to use in allowed_tools`);
        }
        listed.tools = tools;
        item.tools = tools;
        item.status = 'completed';
        ctx.emit({ type: 'mcp.list_tools', phase: 'completed', itemId: item.id });
      } catch (err) {
        item.status = 'incomplete';
        // The call goes on without this server's tools.
        ctx.emit({ type: 'mcp.list_tools', phase: 'failed', itemId: item.id, message: `Listing the tools of '${server.label}' failed: ${(err as Error).message}` });
      } finally {
        release();
      }
      ctx.emit({ type: 'item.done', item: structuredClone(item), previousItemId: ctx.conversation.previousOf(item.id) });
    })();
    return listed;
  }
}
