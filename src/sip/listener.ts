// Where SIP messages come in and answers go out. The server sees a SipListener; SipSockets is the
// one that holds the sockets: a UDP socket, TCP on the same port, and TLS on its own port when a
// certificate is given (in a node of its own, or in the primary of PARLEY_WORKERS, which relays
// each message to a worker: clusterRelay.ts). Streams are framed by Content-Length; datagrams are
// whole. Stream connections are capped for the node and per source address, and one that brings no
// complete message for a while is closed (unless it carries a call): held idle, they would be a
// cheap way to keep everyone else out.
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { createServer, type Server, type Socket as TcpSocket } from 'node:net';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import type { FastifyBaseLogger } from 'fastify';
import { unmapped } from '../system/cidr.js';
import { ConnectionsBySource } from './connectionsBySource.js';
import { MAX_MESSAGE_BYTES, frame } from './message.js';

/** TCP connections one node keeps open at most (each a trunk or a phone). */
const MAX_TCP_CONNECTIONS = 1024;

/** Where a message came from and its answer goes: a datagram's source, or a stream connection. */
export interface Peer {
  transport: 'udp' | 'tcp' | 'tls';
  address: string;
  port: number;
  /** The stream connection (TCP, TLS) by the listener's number for it: answers go back on it. */
  connection?: number;
}

export interface SipPorts {
  udp: number;
  tcp: number;
  tls?: number;
}

/** What the server is told by its listener. */
export interface ListenerEvents {
  /** A message (not yet parsed, at most MAX_MESSAGE_BYTES) from `peer`. */
  received: (bytes: Buffer, peer: Peer) => void;
  /** Whether an idle stream connection still carries a call (then it stays open). */
  carriesCall: (connection: number) => boolean | Promise<boolean>;
}

/** The SIP server's way in and out, whoever holds the sockets. */
export interface SipListener {
  readonly ports: SipPorts;
  /** The port of our side of `peer`'s transport. */
  portOf(peer: Peer): number;
  send(peer: Peer, bytes: Buffer): void;
  close(): Promise<void>;
}

/** The port of our side of `peer`'s transport. */
export const portOf = (ports: SipPorts, peer: Peer): number => (peer.transport === 'tls' ? ports.tls! : ports.udp);

export interface SipSocketOptions {
  host: string;
  port: number;
  /** SIP over TLS: its port (0 picks one) and PEM certificate chain and key. Unset: none. */
  tls?: { port: number; cert: string; key: string };
  /** Stream connections one source address may hold at once (0: no limit); `unlimitedSource` ones are held by the node's cap only. */
  maxConnectionsPerSource: number;
  unlimitedSource: (address: string) => boolean;
  /** A connection was closed as it opened, its source past its share. */
  refusedConnection: () => void;
  /** A stream connection that brings no complete message for this long is closed, unless it carries a call. */
  idleMs: number;
  log: Pick<FastifyBaseLogger, 'debug'>;
}

/** A port the listener could not open: SIP's own (UDP, and TCP on the same port) or the TLS one. */
export class SipBindError extends Error {
  constructor(
    readonly which: 'sip' | 'tls',
    readonly host: string,
    readonly port: number,
    cause: unknown,
  ) {
    super(`SIP (${which}) cannot listen on ${host}:${port}: ${(cause as Error).message}`, { cause });
  }
}

export class SipSockets implements SipListener {
  private readonly udp: UdpSocket;
  private readonly tcp: Server;
  private readonly tls: TlsServer | undefined;
  /** Open stream connections by number (a Peer names its connection so; a relayed one crosses to a worker). */
  private readonly connections = new Map<number, TcpSocket>();
  private lastConnection = 0;
  private readonly sources: ConnectionsBySource;
  private listening: SipPorts = { udp: 0, tcp: 0 };
  private closed = false;

  private constructor(private readonly opts: SipSocketOptions & ListenerEvents) {
    this.udp = createSocket(opts.host.includes(':') ? 'udp6' : 'udp4');
    this.udp.on('message', (bytes, from) => this.datagram(bytes, { transport: 'udp', address: unmapped(from.address), port: from.port }));
    // ICMP errors of sends to a gone caller: nothing to do.
    this.udp.on('error', () => {});
    this.sources = new ConnectionsBySource(opts.maxConnectionsPerSource, opts.unlimitedSource, opts.refusedConnection);
    this.tcp = createServer((socket) => {
      if (this.sources.admit(socket)) this.accepted(socket, 'tcp');
    });
    this.tcp.maxConnections = MAX_TCP_CONNECTIONS;
    if (opts.tls) {
      // A handshake that fails (a scanner, a wrong certificate) is the connection's end, nothing more.
      this.tls = createTlsServer({ cert: opts.tls.cert, key: opts.tls.key, handshakeTimeout: 10_000 }, (socket) => this.accepted(socket, 'tls'));
      this.tls.on('tlsClientError', () => {});
      // Counted as the TCP connection opens: a handshake held open holds a place too.
      this.tls.on('connection', (raw: TcpSocket) => this.sources.admit(raw));
      this.tls.maxConnections = MAX_TCP_CONNECTIONS;
    }
  }

  static async open(opts: SipSocketOptions & ListenerEvents): Promise<SipSockets> {
    const listener = new SipSockets(opts);
    await listener.listen();
    return listener;
  }

  get ports(): SipPorts {
    return this.listening;
  }

  portOf(peer: Peer): number {
    return portOf(this.listening, peer);
  }

  send(peer: Peer, bytes: Buffer): void {
    // An INVITE still being worked on when the server closes has nowhere to answer.
    if (this.closed) return;
    if (peer.transport === 'udp') return void this.udp.send(bytes, peer.port, peer.address);
    const socket = peer.connection === undefined ? undefined : this.connections.get(peer.connection);
    if (socket && !socket.destroyed) socket.write(bytes);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const socket of this.connections.values()) socket.destroy();
    await new Promise<void>((resolve) => this.tcp.close(() => resolve()));
    if (this.tls) await new Promise<void>((resolve) => this.tls!.close(() => resolve()));
    await new Promise<void>((resolve) => this.udp.close(() => resolve()));
  }

  private async listen(): Promise<void> {
    const { host, port } = this.opts;
    const udpPort = await new Promise<number>((resolve, reject) => {
      this.udp.once('error', (err) => reject(new SipBindError('sip', host, port, err)));
      // Exclusive: in a cluster worker, the socket is this process's own, not one shared through the primary.
      this.udp.bind({ port, address: host, exclusive: true }, () => resolve(this.udp.address().port));
    });
    // TCP on the same port (the one a trunk is told), even when UDP's was picked at random.
    await new Promise<void>((resolve, reject) => {
      this.tcp.once('error', (err) => reject(new SipBindError('sip', host, udpPort, err)));
      this.tcp.listen(udpPort, host, () => resolve());
    });
    this.listening = { udp: udpPort, tcp: udpPort };
    const tls = this.tls;
    if (tls) {
      const tlsPort = this.opts.tls!.port;
      await new Promise<void>((resolve, reject) => {
        tls.once('error', (err) => reject(new SipBindError('tls', host, tlsPort, err)));
        tls.listen(tlsPort, host, () => resolve());
      });
      this.listening.tls = (tls.address() as { port: number }).port;
    }
  }

  private datagram(bytes: Buffer, peer: Peer): void {
    if (bytes.length > MAX_MESSAGE_BYTES) return;
    // Keep-alive CRLFs over UDP.
    if (bytes.length <= 4 && /^[\r\n]*$/.test(bytes.toString('latin1'))) return;
    this.opts.received(bytes, peer);
  }

  /** A stream connection (TCP, or TLS once its handshake is done): SIP messages framed by Content-Length. */
  private accepted(socket: TcpSocket, transport: 'tcp' | 'tls'): void {
    const connection = ++this.lastConnection;
    this.connections.set(connection, socket);
    let buffer = Buffer.alloc(0);
    let lastMessageAt = 0;
    const peer: Peer = { transport, address: unmapped(socket.remoteAddress ?? ''), port: socket.remotePort ?? 0, connection };
    const idle = setTimeout(async () => {
      const asked = Date.now();
      const carries = await Promise.resolve(this.opts.carriesCall(connection)).catch(() => true);
      if (socket.destroyed) return;
      // A message that came while the answer was awaited keeps the connection too.
      if (carries || lastMessageAt >= asked) idle.refresh();
      else socket.destroy();
    }, this.opts.idleMs);
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(idle);
      this.connections.delete(connection);
    });
    socket.on('data', (chunk) => {
      buffer = buffer.length ? Buffer.concat([buffer, chunk]) : chunk;
      for (;;) {
        const next = frame(buffer);
        if (next.kind === 'incomplete') return;
        if (next.kind === 'invalid') {
          // A stream we cannot frame cannot be resynchronised: the connection goes.
          this.opts.log.debug({ peer: peer.address, error: next.error }, 'SIP stream unreadable; connection closed');
          return void socket.destroy();
        }
        buffer = Buffer.from(next.rest);
        if (next.kind === 'keepalive') {
          if (next.rest.length === 0) socket.write('\r\n');
          continue;
        }
        idle.refresh();
        lastMessageAt = Date.now();
        this.opts.received(next.bytes, peer);
      }
    });
  }
}
