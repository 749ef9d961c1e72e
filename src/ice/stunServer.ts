// The embedded STUN server: answers RFC 5389 Binding requests on UDP with the sender's address
// (XOR-MAPPED-ADDRESS), so ice-config's default STUN entry works with nothing else installed.
// The message codec is werift-ice's; anything that is not a well-formed Binding request is dropped.
import { createSocket, type Socket } from 'node:dgram';
import { isIP } from 'node:net';
import { hostInUrl } from '../system/addresses.js';
import { bindFailure } from '../system/startupError.js';
import { Message, classes, isComprehensionRequiredAttribute, methods, parseMessage } from 'werift-ice';

export interface StunServerOptions {
  /** Address to bind (an IP or host name). */
  host: string;
  /** UDP port; 0 picks a free one. */
  port: number;
}

export interface StunServer {
  /** The address and port actually bound. */
  readonly address: { address: string; port: number; family: 'IPv4' | 'IPv6' };
  close(): Promise<void>;
}

/** The reply to one datagram, or undefined when it must be ignored (not STUN, malformed, not a Binding request). */
export function stunReply(datagram: Buffer, from: { address: string; port: number }): Buffer | undefined {
  let request: Message | undefined;
  try {
    request = parseMessage(datagram);
  } catch {
    return undefined;
  }
  if (!request || request.messageMethod !== methods.BINDING || request.messageClass !== classes.REQUEST) return undefined;
  // RFC 5389 §7.3.1: unknown comprehension-required attributes get a 420 naming them.
  const unknown = request.unknownAttributeTypes.filter(isComprehensionRequiredAttribute);
  const reply = unknown.length
    ? new Message(methods.BINDING, classes.ERROR, request.transactionId)
        .setAttribute('ERROR-CODE', [420, 'Unknown Attribute'])
        .setAttribute('UNKNOWN-ATTRIBUTES', unknown)
    : new Message(methods.BINDING, classes.RESPONSE, request.transactionId).setAttribute('XOR-MAPPED-ADDRESS', [
        from.address,
        from.port,
      ]);
  return reply.addFingerprint().bytes;
}

export async function startStunServer(opts: StunServerOptions): Promise<StunServer> {
  const socket: Socket = createSocket(isIP(opts.host) === 6 ? 'udp6' : 'udp4');
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(opts.port, opts.host, () => {
      socket.off('error', reject);
      resolve();
    });
  }).catch((err: NodeJS.ErrnoException) => {
    socket.close();
    throw bindFailure(err, 'the embedded STUN server', opts.host, opts.port, 'STUN_PORT (or set STUN_ENABLED=false)', ' (by another STUN/TURN server such as coturn?)');
  });
  // After binding, a send or receive error concerns one datagram; the server keeps running.
  socket.on('error', () => {});
  socket.on('message', (datagram, rinfo) => {
    const reply = stunReply(datagram, rinfo);
    if (reply) socket.send(reply, rinfo.port, rinfo.address, () => {});
  });
  const bound = socket.address();
  return {
    address: { address: bound.address, port: bound.port, family: bound.family === 'IPv6' ? 'IPv6' : 'IPv4' },
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

/**
 * The stun: URL clients use to reach the embedded server: the public IP when one is configured,
 * else the bound address (a wildcard bind falls back to loopback: set STUN_URLS or ICE_PUBLIC_IP).
 */
export function embeddedStunUrl(bound: { address: string; port: number }, publicIp?: string): string {
  const wildcard = bound.address === '0.0.0.0' || bound.address === '::';
  const host = publicIp || (wildcard ? '127.0.0.1' : bound.address);
  return `stun:${hostInUrl(host)}:${bound.port}`;
}

/** coturn answers Binding requests on its TURN ports too: the STUN entries to fall back on. */
export function stunUrlsOfTurnServers(turnUrls: string[]): string[] {
  const urls = turnUrls
    .filter((u) => u.startsWith('turn:'))
    .map((u) => `stun:${u.slice('turn:'.length).replace(/\?.*$/, '')}`);
  return [...new Set(urls)];
}
