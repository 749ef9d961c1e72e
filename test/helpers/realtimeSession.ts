// A GA session over OpenAI's WebSocket (`/v1/realtime`) with the given tools, as the MCP tests use
// it: every event it received, typed messages and their replies.
import WebSocket from 'ws';
import type { RunningServer } from './server.ts';
import { until } from './wait.ts';

export interface RealtimeSession {
  ws: WebSocket;
  events: any[];
  send(event: object): void;
  /** A typed user message, and a response asked for. */
  ask(text: string): void;
  /** The response.done events so far. */
  replies(): any[];
  /** A response's text (or transcript). */
  text(done: any): string;
  /** Why the server closed the socket, once it did. */
  closed(): { code: number; reason: string } | undefined;
  close(): void;
}

/** Opens the session and sets its tools (output text only); resolves once session.updated came. */
export async function realtimeSession(server: Pick<RunningServer, 'baseUrl' | 'devKey'>, tools: object[]): Promise<RealtimeSession> {
  const ws = new WebSocket(`${server.baseUrl.replace('http', 'ws')}/v1/realtime?model=gpt-realtime`, { headers: { authorization: `Bearer ${server.devKey}` } });
  const events: any[] = [];
  let closed: { code: number; reason: string } | undefined;
  ws.on('message', (data) => events.push(JSON.parse(data.toString())));
  // A message past what ws reads (100 MiB) ends the socket with 1009; the test sees it in closed().
  ws.on('error', () => {});
  ws.on('close', (code, reason) => (closed = { code, reason: reason.toString() }));
  await until('session.created', () => events.some((e) => e.type === 'session.created'), (x) => !!x);
  ws.send(JSON.stringify({ type: 'session.update', session: { type: 'realtime', output_modalities: ['text'], tools } }));
  await until('session.updated', () => events.some((e) => e.type === 'session.updated'), (x) => !!x);
  const send = (e: object) => ws.send(JSON.stringify(e));
  return {
    ws,
    events,
    send,
    ask: (text) => {
      send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text }] } });
      send({ type: 'response.create' });
    },
    replies: () => events.filter((e) => e.type === 'response.done'),
    text: (done) => done.response.output.flatMap((i: any) => i.content ?? []).map((c: any) => c.text ?? c.transcript ?? '').join(' '),
    closed: () => closed,
    close: () => ws.close(),
  };
}
