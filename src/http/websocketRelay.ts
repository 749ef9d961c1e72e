// A WebSocket relayed to another node's node-to-node listener, both ways: a sideband connection for
// a call another node carries (so an app may reach any node behind its load balancer), and a whole
// OpenAI WebSocket session a full or loaded node hands to the least-loaded node with room (the
// client keeps its one connection). Either side closing closes the other with its code.
import WebSocket from 'ws';
import type { NodeAuth } from '../auth/nodeAuth.js';

/** Close codes that may not be sent in a close frame (RFC 6455 §7.4.1): replaced by 1000 / 1011. */
const sendable = (code: number) => (code >= 3000 && code <= 4999) || [1000, 1001, 1003, 1007, 1008, 1009, 1010, 1011].includes(code);

export interface RelayTarget {
  /** The other node's node-to-node listener. */
  nodeUrl: string;
  /** The client's request path and query, as it asked. */
  path: string;
  /** The client's credentials and dialect headers, passed on. */
  headers: Record<string, string>;
  /** Subprotocols the client offered (a browser's credential travels there). */
  protocols?: string[];
  /** Signs the upgrade as this node's (the other node's listener answers nothing else). */
  auth: NodeAuth;
}

/** Opens the WebSocket on the other node (connecting; messages sent meanwhile wait in the relay). */
export function connectToNode(target: RelayTarget): WebSocket {
  const url = new URL(target.path, target.nodeUrl);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  const protocols = target.protocols ?? [];
  // ws sends the subprotocols as one header, comma-separated: signed as the other node will read it.
  const signed = { ...target.headers, ...(protocols.length ? { 'sec-websocket-protocol': protocols.join(',') } : {}) };
  const headers = { ...target.headers, ...target.auth.sign({ method: 'GET', path: url.pathname + url.search, headers: signed }) };
  return new WebSocket(url, protocols, { headers, perMessageDeflate: false });
}

/**
 * Resolves once the other node took the connection, paused so that nothing it says is lost before
 * relayWebSocket(); rejects with the status it refused with, or its connection error.
 */
export function opened(upstream: WebSocket, timeoutMs = 10_000): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      upstream.terminate();
      reject(new Error('no answer'));
    }, timeoutMs);
    upstream.once('open', () => {
      clearTimeout(timer);
      upstream.pause();
      resolve(upstream);
    });
    upstream.once('unexpected-response', (_req, res) => {
      clearTimeout(timer);
      res.resume();
      upstream.terminate();
      reject(Object.assign(new Error(`refused ${res.statusCode}`), { statusCode: res.statusCode }));
    });
    upstream.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/** A sideband connection relayed to the node that carries its call. */
export function relaySideband(client: WebSocket, target: RelayTarget, maxUnsentBytes: number): void {
  relayWebSocket(client, connectToNode(target), maxUnsentBytes);
}

/** Relays `client` to `upstream` (connecting, or opened and paused by opened()) both ways. */
export function relayWebSocket(client: WebSocket, upstream: WebSocket, maxUnsentBytes: number): void {
  // What the app sends before the carrying node has answered waits for it.
  const early: { data: WebSocket.RawData; binary: boolean }[] = [];
  client.on('message', (data, binary) => {
    if (upstream.readyState === WebSocket.OPEN) upstream.send(data, { binary });
    else if (upstream.readyState === WebSocket.CONNECTING) early.push({ data, binary });
  });
  upstream.on('open', () => {
    for (const m of early.splice(0)) upstream.send(m.data, { binary: m.binary });
  });
  upstream.on('message', (data, binary) => {
    // An app that stops reading is cut off here, as it would be on the carrying node.
    if (client.bufferedAmount > maxUnsentBytes) return void client.terminate();
    if (client.readyState === WebSocket.OPEN) client.send(data, { binary });
  });
  upstream.on('close', (code, reason) => {
    if (client.readyState === WebSocket.OPEN) client.close(sendable(code) ? code : 1011, reason);
  });
  // The carrying node is gone or refused the relay (the call ended meanwhile): the app is told.
  upstream.on('unexpected-response', (_req, res) => {
    res.resume();
    if (client.readyState === WebSocket.OPEN) client.close(1011, 'call_not_reachable');
    upstream.terminate();
  });
  upstream.on('error', () => {
    if (client.readyState === WebSocket.OPEN) client.close(1011, 'node_unreachable');
  });
  client.on('close', (code, reason) => {
    if (upstream.readyState === WebSocket.OPEN) upstream.close(sendable(code) ? code : 1000, reason);
    else if (upstream.readyState === WebSocket.CONNECTING) upstream.terminate();
  });
  client.on('error', () => upstream.terminate());
  if (upstream.isPaused) upstream.resume();
}
