// Any OpenAI-compatible chat-completions endpoint (LLM_BASE_URL), streamed over SSE, with
// instructions, temperature and the history passed through.
import type { ReplyModel, ReplyRequest } from './types.js';

export interface OpenAiCompatibleOptions {
  baseUrl: string;
  apiKey?: string;
  model: string;
  timeoutMs: number;
}

export function openAiCompatibleModel(opts: OpenAiCompatibleOptions): ReplyModel {
  return {
    async *reply(req: ReplyRequest) {
      const messages = [
        ...(req.instructions ? [{ role: 'system', content: req.instructions }] : []),
        ...req.history.map((t) => ({ role: t.role, content: t.text })),
        { role: 'user', content: req.text },
      ];
      const timeout = AbortSignal.timeout(opts.timeoutMs);
      const signal = AbortSignal.any([req.signal, timeout]);
      const res = await fetch(`${opts.baseUrl.replace(/\/$/, '')}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {}) },
        body: JSON.stringify({ model: opts.model, messages, temperature: req.temperature, stream: true }),
        signal,
      });
      if (!res.ok || !res.body) throw new Error(`language model answered HTTP ${res.status}`);
      const decoder = new TextDecoder();
      let buffer = '';
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let nl: number;
        while ((nl = buffer.indexOf('\n')) >= 0) {
          const line = buffer.slice(0, nl).trim();
          buffer = buffer.slice(nl + 1);
          if (!line.startsWith('data:')) continue;
          const data = line.slice(5).trim();
          if (data === '[DONE]') return;
          let parsed: { choices?: { delta?: { content?: string } }[] };
          try {
            parsed = JSON.parse(data);
          } catch {
            throw new Error('language model sent a malformed stream');
          }
          const delta = parsed.choices?.[0]?.delta?.content;
          if (delta) yield delta;
        }
      }
    },
  };
}
