// The node:http server under Fastify: time limits on headers and whole requests (slowloris, slow
// bodies), Shape A answers to broken or late requests, and bodies left unread after an early answer
// (413, 401…) read and discarded up to a bound, so clients get to read that answer (as nginx does).
import { createServer, type IncomingMessage, type RequestListener, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import { shapeA } from './errors.js';

export interface HttpLimits {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
}

/**
 * Bytes of an unread body we read and throw away after answering early. A client that goes on
 * sending beyond it is disconnected (it may then miss the answer; below it, it never does).
 */
export const MAX_DISCARDED_BODY_BYTES = 64 * 1024 * 1024;

export function createHttpServer(limits: HttpLimits, handler: RequestListener, tls?: { cert: string; key: string }): Server {
  const options = {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    // How often the two limits above are enforced (Node's default, 30 s, would let a slow
    // request run that much longer than its limit).
    connectionsCheckingInterval: 1000,
  };
  const server = tls ? createHttpsServer({ ...options, ...tls }, handler) : createServer(options, handler);
  // Fastify sets the same; a keep-alive connection idle longer than this is closed.
  server.keepAliveTimeout = 72_000;
  return server;
}

/** Fastify's clientErrorHandler: late or malformed requests get a Shape A answer, then the socket closes. */
export function answerClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, reason, message] =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'Request Timeout', 'The request was not received in time.']
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'Request Header Fields Too Large', 'The request headers are too large.']
        : [400, 'Bad Request', 'The request is not valid HTTP.'];
  // Only when no answer has started on this socket (Node's own rule).
  const pending = (socket as Socket & { _httpMessage?: { headersSent: boolean } })._httpMessage;
  if (socket.writable && !pending?.headersSent) {
    const body = JSON.stringify(shapeA(message));
    socket.write(`HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy();
}

/**
 * After an answer sent before the request body was read: let Node read the rest and drop it (the
 * connection stays usable), but not past MAX_DISCARDED_BODY_BYTES; the request timeout bounds the time.
 */
export function discardUnreadBody(req: IncomingMessage): void {
  if (req.complete) return;
  let discarded = 0;
  req.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > MAX_DISCARDED_BODY_BYTES) req.socket.destroy();
  });
  req.resume();
}
