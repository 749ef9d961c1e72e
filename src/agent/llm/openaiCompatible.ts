// Any OpenAI-compatible chat-completions endpoint (LLM_BASE_URL), streamed over SSE: instructions,
// temperature, the conversation and the client's tools go in; text deltas, tool calls and usage
// come out as they arrive.
import { upstreamFailed, upstreamSpan, type TraceSpan } from '../../observability/tracing.js';
import { imageDataUrl } from '../../session/conversation.js';
import type { ChatMessage, ReplyChunk, ReplyModel, ReplyRequest, ToolChoice } from './types.js';

export interface OpenAiCompatibleOptions {
  baseUrl: string;
  apiKey?: string;
  model: string;
  timeoutMs: number;
  /** The model takes images (image_url content parts); false: they are left out and the model told one was shown. */
  images?: boolean;
}

interface StreamChunk {
  choices?: {
    delta?: {
      content?: string | null;
      tool_calls?: { index?: number; id?: string; function?: { name?: string; arguments?: string } }[];
    };
  }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number } | null;
}

/** A user message with pictures: its text, then each picture as an image_url part (a JPEG data URL). */
function userContent(m: Extract<ChatMessage, { role: 'user' }>, images: boolean): unknown {
  if (!m.images?.length) return m.content;
  if (!images) {
    const note = m.images.length === 1 ? '[The user showed an image, which this model cannot see.]' : `[The user showed ${m.images.length} images, which this model cannot see.]`;
    return m.content ? `${m.content}\n${note}` : note;
  }
  return [
    ...(m.content ? [{ type: 'text', text: m.content }] : []),
    ...m.images.map((i) => ({ type: 'image_url', image_url: { url: imageDataUrl(i.image), detail: i.detail } })),
  ];
}

function wireMessage(m: ChatMessage, images: boolean): Record<string, unknown> {
  switch (m.role) {
    case 'user':
      return { role: 'user', content: userContent(m, images) };
    case 'assistant':
      return m.toolCalls?.length
        ? {
            role: 'assistant',
            content: m.content || null,
            tool_calls: m.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })),
          }
        : { role: 'assistant', content: m.content };
    case 'tool':
      return { role: 'tool', tool_call_id: m.toolCallId, content: m.content };
  }
}

function wireToolChoice(choice: ToolChoice): unknown {
  return typeof choice === 'string' ? choice : { type: 'function', function: { name: choice.name } };
}

export function requestBody(model: string, req: ReplyRequest, images = true): Record<string, unknown> {
  return {
    model,
    messages: [...(req.instructions ? [{ role: 'system', content: req.instructions }] : []), ...req.messages.map((m) => wireMessage(m, images))],
    temperature: req.temperature,
    stream: true,
    stream_options: { include_usage: true },
    ...(req.maxOutputTokens ? { max_tokens: req.maxOutputTokens } : {}),
    ...(req.tools.length
      ? {
          tools: req.tools.map((t) => ({
            type: 'function',
            function: { name: t.name, ...(t.description ? { description: t.description } : {}), parameters: t.parameters ?? { type: 'object', properties: {} } },
          })),
          tool_choice: wireToolChoice(req.toolChoice),
        }
      : {}),
  };
}

/** The reply chunks one SSE `data:` payload carries. */
export function chunksOf(data: StreamChunk): ReplyChunk[] {
  const out: ReplyChunk[] = [];
  const delta = data.choices?.[0]?.delta;
  if (delta?.content) out.push({ type: 'text', delta: delta.content });
  for (const call of delta?.tool_calls ?? []) {
    out.push({
      type: 'tool_call',
      index: call.index ?? 0,
      ...(call.id ? { id: call.id } : {}),
      ...(call.function?.name ? { name: call.function.name } : {}),
      argumentsDelta: call.function?.arguments ?? '',
    });
  }
  if (data.usage) out.push({ type: 'usage', inputTokens: data.usage.prompt_tokens ?? 0, outputTokens: data.usage.completion_tokens ?? 0 });
  return out;
}

export function openAiCompatibleModel(opts: OpenAiCompatibleOptions): ReplyModel {
  const url = `${opts.baseUrl.replace(/\/$/, '')}/chat/completions`;

  async function* stream(req: ReplyRequest, span: TraceSpan): AsyncIterable<ReplyChunk> {
    const signal = AbortSignal.any([req.signal, AbortSignal.timeout(opts.timeoutMs)]);
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {}) },
      body: JSON.stringify(requestBody(opts.model, req, opts.images ?? true)),
      signal,
    });
    span.set({ 'http.response.status_code': res.status });
    if (!res.ok || !res.body) throw new Error(`language model answered HTTP ${res.status}`);
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const bytes of res.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(bytes, { stream: true });
      let nl: number;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl).trim();
        buffer = buffer.slice(nl + 1);
        if (!line.startsWith('data:')) continue;
        const data = line.slice(5).trim();
        if (data === '[DONE]') return;
        let parsed: StreamChunk;
        try {
          parsed = JSON.parse(data) as StreamChunk;
        } catch {
          throw new Error('language model sent a malformed stream');
        }
        yield* chunksOf(parsed);
      }
    }
  }

  return {
    name: 'llm',
    async *reply(req: ReplyRequest) {
      // The span lasts until the stream ends (or the reply stops reading it).
      const span = upstreamSpan(req.trace, 'llm', url, opts.model);
      try {
        yield* stream(req, span);
      } catch (err) {
        upstreamFailed(span, err, req.signal);
        throw err;
      } finally {
        span.end();
      }
    },
  };
}
