// Functions a client offers the reply model (OpenAI `tools` of type function) and how it may use them.

export interface ToolDefinition {
  name: string;
  description?: string;
  /** JSON Schema of the arguments. */
  parameters?: Record<string, unknown>;
}

export type ToolChoice = 'auto' | 'none' | 'required' | { name: string };
