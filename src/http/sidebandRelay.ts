// A sideband connection for a call another node carries: this node opens the same WebSocket on
// the carrying node's node-to-node listener and relays the messages both ways, so an app may reach
// any node behind its load balancer. Either side closing closes the other with its code.
import WebSocket from 'ws';
import { FORWARDED_BY } from './nodeForwarding.js';

/** Close codes that may not be sent in a close frame (RFC 6455 §7.4.1): replaced by 1000 / 1011. */
const sendable = (code: number) => (code >= 3000 && code <= 4999) || [1000, 1001, 1003, 1007, 1008, 1009, 1010, 1011].includes(code);

export function relaySideband(client: WebSocket, target: { nodeUrl: string; path: string; authorization: string; selfId: string }, maxUnsentBytes: number): void {
  const url = new URL(target.path, target.nodeUrl);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  const upstream = new WebSocket(url, { headers: { authorization: target.authorization, [FORWARDED_BY]: target.selfId }, perMessageDeflate: false });
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
}
