// The WebSocket to an upstream realtime model (OpenAI's Realtime protocol): opened with the
// operator's key, each message read as one JSON event, and everything that can go wrong said once as
// a failure in words for the client — the status it refused with, a drop, a message that is not
// JSON, a flood — never the key, the URL (it may hold credentials) or what the upstream wrote.
import WebSocket from 'ws';
import { TokenBucket } from '../../system/tokenBucket.js';
import type { UpstreamFailure } from './types.js';

export interface UpstreamSocketOptions {
  /** The catalogue id, which messages name (never the URL). */
  modelId: string;
  /** The upstream's WebSocket URL; `model` joins its query. */
  url: string;
  model: string;
  apiKey?: string;
  /** Asks for the beta interface (`OpenAI-Beta: realtime=v1`). */
  beta: boolean;
  /** The largest message read; a larger one ends the session (ws closes with 1009). */
  maxPayloadBytes: number;
  /** Events a second the upstream may send on average (bursts of two seconds' worth). */
  maxEventsPerSecond: number;
}

export interface UpstreamSocketHandlers {
  open(): void;
  /** One event: a JSON object with a string `type`. */
  message(event: Record<string, unknown>): void;
  /** Said once; the socket is closed by then and says nothing more. */
  failed(failure: UpstreamFailure): void;
}

/** The upstream's answer to the upgrade, in words (its body is never read). */
export function refusalOf(modelId: string, status: number): UpstreamFailure {
  const why =
    status === 401 || status === 403
      ? `refused Parley's credentials (HTTP ${status})`
      : status === 404
        ? `was not found at its URL (HTTP ${status})`
        : status === 429
          ? `is over its rate limit or quota (HTTP ${status})`
          : status >= 500
            ? `is failing (HTTP ${status})`
            : `refused the connection (HTTP ${status})`;
  return { code: 'model_unavailable', message: `The model ${modelId} ${why}.` };
}

export class UpstreamSocket {
  private readonly ws: WebSocket;
  private done = false;
  private opened = false;
  private readonly rate: TokenBucket;

  constructor(
    private readonly opts: UpstreamSocketOptions,
    private readonly handlers: UpstreamSocketHandlers,
  ) {
    this.rate = new TokenBucket(opts.maxEventsPerSecond, 2 * opts.maxEventsPerSecond);
    const url = new URL(opts.url);
    url.searchParams.set('model', opts.model);
    const headers: Record<string, string> = {};
    if (opts.apiKey) headers.authorization = `Bearer ${opts.apiKey}`;
    if (opts.beta) headers['openai-beta'] = 'realtime=v1';
    this.ws = new WebSocket(url, { headers, maxPayload: opts.maxPayloadBytes, perMessageDeflate: false, followRedirects: false });
    this.ws.on('open', () => {
      this.opened = true;
      if (!this.done) handlers.open();
    });
    this.ws.on('unexpected-response', (_req, res) => {
      res.resume();
      this.fail(refusalOf(opts.modelId, res.statusCode ?? 0));
    });
    this.ws.on('message', (data, binary) => this.read(data, binary));
    this.ws.on('error', (err: Error & { code?: string }) => this.fail(this.errorOf(err)));
    this.ws.on('close', (code) => this.fail({ code: 'model_failed', message: `The model ${opts.modelId} closed its connection mid-call (WebSocket close ${code}).` }));
  }

  get isOpen(): boolean {
    return this.opened && !this.done && this.ws.readyState === WebSocket.OPEN;
  }

  /** Bytes sent and not yet on the wire (a stalled upstream). */
  get bufferedBytes(): number {
    return this.ws.bufferedAmount;
  }

  send(event: Record<string, unknown>): void {
    if (this.isOpen) this.ws.send(JSON.stringify(event));
  }

  /** Closes it for good; nothing more is said. */
  close(): void {
    if (this.done) return;
    this.done = true;
    this.ws.removeAllListeners('message');
    // A late error of a closing socket must not be thrown as unhandled.
    this.ws.on('error', () => {});
    if (this.ws.readyState === WebSocket.OPEN) this.ws.close(1000);
    else this.ws.terminate();
  }

  private read(data: WebSocket.RawData, binary: boolean): void {
    if (this.done) return;
    const name = this.opts.modelId;
    if (!this.rate.take()) return this.fail({ code: 'model_failed', message: `The model ${name} sent more than ${this.opts.maxEventsPerSecond} events a second.` });
    if (binary) return this.fail({ code: 'model_failed', message: `The model ${name} sent a binary message (its protocol has only JSON events).` });
    let event: unknown;
    try {
      event = JSON.parse(data.toString());
    } catch {
      return this.fail({ code: 'model_failed', message: `The model ${name} sent a message that is not JSON.` });
    }
    if (!event || typeof event !== 'object' || Array.isArray(event) || typeof (event as { type?: unknown }).type !== 'string') {
      return this.fail({ code: 'model_failed', message: `The model ${name} sent a message that is not an event (a JSON object with a type).` });
    }
    this.handlers.message(event as Record<string, unknown>);
  }

  private errorOf(err: Error & { code?: string }): UpstreamFailure {
    const name = this.opts.modelId;
    if (err.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') return { code: 'model_failed', message: `The model ${name} sent a message larger than ${this.opts.maxPayloadBytes} bytes.` };
    if (!this.opened) return { code: 'model_unavailable', message: `The model ${name} could not be reached${err.code ? ` (${err.code})` : ''}.` };
    return { code: 'model_failed', message: `The model ${name}'s connection failed${err.code ? ` (${err.code})` : ''}.` };
  }

  private fail(failure: UpstreamFailure): void {
    if (this.done) return;
    this.close();
    this.handlers.failed(failure);
  }
}
