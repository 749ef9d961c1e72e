// Requests to URLs a user chose (a webhook receiver, a session's MCP server), made so that the URL
// cannot turn the server against itself: the host is resolved, every address it resolves to is
// checked against the outbound policy, and the request connects to that very address (no second
// lookup a DNS change could answer otherwise). Of the answer only what the caller bounds is read:
// the status and the body's first bytes (outboundRequest), or a body up to a size (outboundFetch, a
// fetch for clients that want one); the rest is left unread and the connection closed, so a
// receiver cannot fill our memory.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import type { HostResolver } from './hostResolver.js';
import type { Listener, OutboundPolicy } from './outboundPolicy.js';

/** The destination is one the policy refuses; nothing was sent. */
export class OutboundRefused extends Error {}

export interface OutboundGuard {
  policy: OutboundPolicy;
  resolve: HostResolver;
  /** Parley's own listeners as they are now (ports are picked at start, nodes come and go). */
  ownListeners: () => Promise<readonly Listener[]>;
}

interface SendInit {
  method: string;
  headers: Record<string, string>;
  body?: string;
  /** Bounds the whole request: resolution, connection, answer. */
  signal: AbortSignal;
}

export interface OutboundInit extends SendInit {
  body: string;
  /** How much of the answer's body to read; the rest is never read. */
  keepBytes: number;
}

export interface OutboundResponse {
  status: number;
  /** The body's first bytes, at most the `keepBytes` asked for. */
  head: Buffer;
}

/** The host of `url` (an IPv6 address without its brackets) and the port it connects to. */
function destination(url: URL): { host: string; port: number } {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return { host, port: url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80 };
}

/**
 * The addresses `url` would connect to, when every one is allowed; throws OutboundRefused naming
 * a refused one (and the resolver's error when the host does not resolve).
 */
export async function allowedAddresses(url: URL, guard: OutboundGuard): Promise<string[]> {
  const { host, port } = destination(url);
  const [addresses, listeners] = await Promise.all([guard.resolve(host), guard.ownListeners()]);
  for (const address of addresses) {
    const why = guard.policy.refusal(address, port, listeners);
    if (why) throw new OutboundRefused(isIP(host) ? why : `${host}: ${why}`);
  }
  return addresses;
}

/** Connection errors after which the host's next address is tried: nothing was sent yet. */
const UNREACHABLE = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL']);

/**
 * Sends the request to the addresses of `url`'s host, in the resolver's order, until one takes
 * the connection; `signal` bounds all of it. Resolves with the status and the body's first
 * `keepBytes`.
 */
export async function outboundRequest(url: URL, init: OutboundInit, guard: OutboundGuard): Promise<OutboundResponse> {
  const res = await sendChecked(url, init, guard);
  return { status: res.statusCode ?? 0, head: await readHead(res, init.keepBytes) };
}

/** The answer as it arrives (its body unread), from the first of the host's checked addresses that takes the connection. */
async function sendChecked(url: URL, init: SendInit, guard: OutboundGuard): Promise<IncomingMessage> {
  const addresses = await untilAborted(allowedAddresses(url, guard), init.signal);
  let failure: unknown;
  for (const address of addresses) {
    try {
      return await requestTo(address, url, init);
    } catch (err) {
      failure = err;
      if (!UNREACHABLE.has((err as NodeJS.ErrnoException).code ?? '')) break;
    }
  }
  throw failure;
}

function requestTo(address: string, url: URL, init: SendInit): Promise<IncomingMessage> {
  const { host, port } = destination(url);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      {
        host: address,
        port,
        method: init.method,
        path: url.pathname + url.search,
        headers: { host: url.host, ...(init.body === undefined ? {} : { 'content-length': String(Buffer.byteLength(init.body)) }), ...init.headers },
        // The certificate is checked against the name, not the address connected to.
        ...(isIP(host) ? {} : { servername: host }),
        signal: init.signal,
      },
      resolve,
    );
    req.on('error', reject);
    req.end(init.body);
  });
}

/** A successful answer's body was larger than the bound: it was not read past it. */
export class AnswerTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`the answer is larger than ${limit} bytes`);
  }
}

export interface FetchBounds {
  /** A successful (2xx) answer's body: past this many bytes, reading it fails with AnswerTooLarge. */
  maxBodyBytes: number;
  /** Any other answer's body (an error page) is cut to this many bytes. */
  maxErrorBytes: number;
  /** Each request whole: resolution, connection, the body's last byte. */
  timeoutMs: number;
}

/**
 * A fetch, for a client library that takes one, whose requests go to `guard`'s checked addresses
 * only, never follow a redirect (a 3xx is answered as it is: the client may ask again, checked
 * again), and whose answers are read within `bounds`. `tooLarge` hears of an answer cut off past
 * its bound (the body's reader gets the same error), for a client that reads bodies as streams
 * and might not notice.
 */
export function outboundFetch(guard: OutboundGuard, bounds: FetchBounds, tooLarge?: (err: AnswerTooLarge) => void): typeof fetch {
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`only http(s) URLs are fetched, not ${url.protocol}`);
    if (init?.body != null && typeof init.body !== 'string') throw new TypeError('only a string body is sent');
    const timeout = AbortSignal.timeout(bounds.timeoutMs);
    const signal = init?.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    const headers = Object.fromEntries(new Headers(init?.headers).entries());
    const res = await sendChecked(url, { method: init?.method ?? 'GET', headers, ...(init?.body != null ? { body: init.body } : {}), signal }, guard);
    const status = res.statusCode ?? 0;
    if (status < 200 || status > 599) {
      res.destroy();
      throw new TypeError(`unexpected HTTP status ${status}`);
    }
    const answerHeaders = new Headers();
    for (const [name, value] of Object.entries(res.headers)) for (const v of [value ?? []].flat()) answerHeaders.append(name, v);
    const ok = status < 300;
    const body = [204, 205, 304].includes(status) ? (res.resume(), null) : boundedBody(res, ok ? bounds.maxBodyBytes : bounds.maxErrorBytes, ok ? tooLarge ?? (() => {}) : undefined);
    return new Response(body, { status, statusText: res.statusMessage ?? '', headers: answerHeaders });
  };
}

/**
 * `res`'s body as a stream, read as its reader asks: at most `limit` bytes. Past them the response
 * (and its connection) is destroyed, and the stream fails with AnswerTooLarge (told to `tooLarge`)
 * or, without `tooLarge`, ends there (cut).
 */
function boundedBody(res: IncomingMessage, limit: number, tooLarge: ((err: AnswerTooLarge) => void) | undefined): ReadableStream<Uint8Array> {
  let read = 0;
  let settled = false;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const settle = (how: () => void) => {
        if (settled) return;
        settled = true;
        how();
      };
      res.on('data', (chunk: Buffer) => {
        if (settled) return;
        if (read + chunk.length > limit) {
          if (tooLarge) {
            const err = new AnswerTooLarge(limit);
            settle(() => controller.error(err));
            tooLarge(err);
          } else {
            const part = chunk.subarray(0, limit - read);
            settle(() => {
              if (part.length) controller.enqueue(part);
              controller.close();
            });
          }
          res.destroy();
          return;
        }
        read += chunk.length;
        controller.enqueue(chunk);
        if ((controller.desiredSize ?? 0) <= 0) res.pause();
      });
      res.on('end', () => settle(() => controller.close()));
      res.on('error', (err) => settle(() => controller.error(err)));
      res.on('close', () => settle(() => controller.error(new Error('the connection closed before the answer ended'))));
    },
    pull() {
      res.resume();
    },
    cancel() {
      settled = true;
      res.destroy();
    },
  });
}

/** `work`'s result, or the signal's reason when it aborts first (a resolver may take its time). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** The body's first `keepBytes`; past them the response (and its connection) is destroyed unread. */
function readHead(res: IncomingMessage, keepBytes: number): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let kept = 0;
    const done = () => resolve(Buffer.concat(chunks));
    res.on('data', (chunk: Buffer) => {
      if (kept >= keepBytes) return;
      const part = chunk.subarray(0, keepBytes - kept);
      chunks.push(part);
      kept += part.length;
      if (kept >= keepBytes) {
        res.destroy();
        done();
      }
    });
    // A body cut short (the receiver's reset, our timeout) still leaves the status it answered.
    res.on('error', () => {});
    res.on('end', done);
    res.on('close', done);
  });
}
