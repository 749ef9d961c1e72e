// Requests that another node should answer: a calls request this node has no room for goes to the
// least-loaded live node with room (offered by its door, src/calls/door.ts), and a request for a
// call another node (or worker) carries goes to that node. The client sees one ordinary answer, the other node's, relayed as it came.
// Nodes reach each other on their node-to-node listener (INTERNAL_HOST:INTERNAL_PORT); a request
// passed on is signed by the node that passes it (src/auth/nodeAuth.ts), the listener answers
// nothing else, and a request that came that way is never passed again.
import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction, preParsingAsyncHookHandler } from 'fastify';
import type { NodeAuth, SignedRequest } from '../auth/nodeAuth.js';
import type { Services } from '../services.js';
import type { PlacementRequest } from '../calls/placement.js';
import { shapeA } from './errors.js';
import { BODY_LIMIT } from './schemas.js';

/** What the other node needs to judge the request as this node would. */
const REQUEST_HEADERS = ['authorization', 'content-type', 'accept', 'user-agent'];
/** What the client needs of the other node's answer (CORS and the like are this node's own). */
const ANSWER_HEADERS = ['content-type', 'location', 'retry-after', 'x-parley-node'];
/** A node that has not answered by then is taken as gone. */
const FORWARD_TIMEOUT_MS = 15_000;

declare module 'fastify' {
  interface FastifyRequest {
    /** The node that passed this request on (only set for requests on the node-to-node listener). */
    forwardedFromNode?: string;
    /** A calls request's body as it came, kept while this node had no room for a call (keepBodyWhenFull). */
    keptBody?: Buffer;
  }
}

/** Requests on the node-to-node listener, signed by a node of this cluster: the node's id. */
const fromNode = new WeakMap<IncomingMessage, string>();

const signedRequest = (req: IncomingMessage): SignedRequest => ({ method: req.method ?? '', path: req.url ?? '', headers: req.headers });

/** What the node-to-node listener answers a request no node signed (nothing else is looked at). */
const REFUSAL = JSON.stringify(
  shapeA("This is Parley's node-to-node listener: it answers only the cluster's nodes, whose requests are signed with a key derived from API_KEY_PEPPER.", 'node_authentication_failed'),
);

function refuse(res: ServerResponse): void {
  res.writeHead(401, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(REFUSAL), connection: 'close' });
  res.end(REFUSAL);
}

/**
 * The node-to-node listener's request handler: the public one, for requests a node of this cluster
 * signed (marked as coming from it); anything else is refused 401 before it is read.
 */
export function internalListenerHandler(handler: RequestListener, auth: NodeAuth): RequestListener {
  return (req, res) => {
    const node = auth.verify(signedRequest(req));
    if (node === undefined) return refuse(res);
    fromNode.set(req, node);
    handler(req, res);
  };
}

/**
 * WebSocket upgrades on the node-to-node listener (a sideband connection or a session another node
 * relays): handled by the public server's routes when a node signed them, marked like its requests.
 */
export function relayInternalUpgrades(internal: Server, server: Server, auth: NodeAuth): void {
  internal.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const node = auth.verify(signedRequest(req));
    if (node === undefined) {
      socket.on('error', () => {});
      socket.end(`HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(REFUSAL)}\r\nconnection: close\r\n\r\n${REFUSAL}`);
      return;
    }
    fromNode.set(req, node);
    server.emit('upgrade', req, socket, head);
  });
}

/** onRequest hook: notes which node passed the request on, when a node signed it on the node-to-node listener. */
export function recognizeForwarded(req: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void {
  const node = fromNode.get(req.raw);
  if (node !== undefined) req.forwardedFromNode = node;
  done();
}

export interface NodeAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** Sends the request (with `body`, already read) to the node listening at `nodeUrl`, signed by this node. */
export async function forwardTo(nodeUrl: string, req: FastifyRequest, body: Buffer | undefined, auth: NodeAuth): Promise<NodeAnswer> {
  const headers: Record<string, string> = {};
  for (const name of REQUEST_HEADERS) {
    const value = req.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  const url = new URL(req.url, nodeUrl);
  Object.assign(headers, auth.sign({ method: req.method, path: url.pathname + url.search, headers }));
  const res = await fetch(url, {
    method: req.method,
    headers,
    ...(body ? { body: new Uint8Array(body) } : {}),
    signal: AbortSignal.timeout(FORWARD_TIMEOUT_MS),
  });
  const answer: NodeAnswer = { status: res.status, headers: {}, body: Buffer.from(await res.arrayBuffer()) };
  for (const name of ANSWER_HEADERS) {
    const value = res.headers.get(name);
    if (value !== null) answer.headers[name] = value;
  }
  return answer;
}

export function sendAnswer(reply: FastifyReply, answer: NodeAnswer): FastifyReply {
  return reply.code(answer.status).headers(answer.headers).send(answer.body);
}

/**
 * preParsing hook of the calls routes: a node at its call limit or its load threshold keeps the
 * request's body as it came, for its door to offer to another node (placeRequestElsewhere) once the
 * request is read and the caller's own limits are checked (src/calls/door.ts). A request another
 * node passed here is never passed on again.
 */
export function keepBodyWhenFull(services: Services): preParsingAsyncHookHandler {
  return async (req, _reply, payload) => {
    if (req.forwardedFromNode || !services.calls.isFull) return payload;
    req.keptBody = await readBody(payload);
    return Readable.from([req.keptBody]);
  };
}

/**
 * A door's way to offer its request to the other nodes with room, in turn (calls/placement.ts): its
 * body as it came (`body`, else the one keepBodyWhenFull kept). A node that is gone, full or
 * draining (503) gives way to the next; the taker's answer is what the client gets. Undefined when
 * the request cannot be passed on: another node passed it here, or its body was not kept.
 */
export function placeRequestElsewhere(services: Services, req: FastifyRequest, placement: PlacementRequest, body = req.keptBody): (() => Promise<NodeAnswer | undefined>) | undefined {
  if (req.forwardedFromNode || !body) return undefined;
  return () =>
    services.placement.elsewhere(placement, async (node) => {
      const answer = await forwardTo(node.url!, req, body, services.nodeAuth);
      return answer.status === 503 ? undefined : { status: answer.status, value: answer };
    });
}

/** The whole request body, up to the limit every route has (413 beyond it). */
async function readBody(payload: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of payload) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    size += buf.length;
    if (size > BODY_LIMIT) throw Object.assign(new Error('Request body is too large'), { statusCode: 413, code: 'FST_ERR_CTP_BODY_TOO_LARGE' });
    chunks.push(buf);
  }
  return Buffer.concat(chunks);
}
