// One HTTP(S) request to a URL a user chose (a webhook receiver), made so that the URL cannot turn
// the server against itself: the host is resolved, every address it resolves to is checked against
// the outbound policy, and the request connects to that very address (no second lookup a DNS
// change could answer otherwise). Of the answer only the status and the body's first bytes are
// read; the rest is left unread and the connection closed, so a receiver cannot fill our memory.
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

export interface OutboundInit {
  method: string;
  headers: Record<string, string>;
  body: string;
  /** Bounds the whole request: resolution, connection, answer. */
  signal: AbortSignal;
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
 * the connection; `signal` bounds all of it.
 */
export async function outboundRequest(
  url: URL,
  init: OutboundInit,
  guard: OutboundGuard,
): Promise<OutboundResponse> {
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

function requestTo(address: string, url: URL, init: OutboundInit): Promise<OutboundResponse> {
  const { host, port } = destination(url);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      {
        host: address,
        port,
        method: init.method,
        path: url.pathname + url.search,
        headers: { host: url.host, 'content-length': String(Buffer.byteLength(init.body)), ...init.headers },
        // The certificate is checked against the name, not the address connected to.
        ...(isIP(host) ? {} : { servername: host }),
        signal: init.signal,
      },
      (res) => void readHead(res, init.keepBytes).then((head) => resolve({ status: res.statusCode ?? 0, head })),
    );
    req.on('error', reject);
    req.end(init.body);
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
