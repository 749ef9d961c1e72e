// Functions a client offers the reply model (OpenAI `tools` of type function) and how it may use them.

export interface ToolDefinition {
  name: string;
  description?: string;
  /** JSON Schema of the arguments. */
  parameters?: Record<string, unknown>;
}

export type ToolChoice = 'auto' | 'none' | 'required' | { name: string };

/**
 * A remote MCP server a session offers the model (OpenAI's `{"type": "mcp", ...}` tool): its tools
 * are listed when the session names it and called over streamable HTTP.
 */
export interface McpServer {
  label: string;
  url: string;
  /** Only these of its tools (undefined: all). */
  allowedTools?: string[];
  /** Which calls wait for the client's approval: all, none, or all but those named. */
  requireApproval: 'always' | 'never' | { never: string[] };
  /** Sent with every request to it (an Authorization, an API key). */
  headers?: Record<string, string>;
}
