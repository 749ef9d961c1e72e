// A TURN client that does one thing: ask a server for a UDP relay with long-term credentials (RFC 5766
// §6: the unauthenticated Allocate learns realm and nonce from the 401, the second carries USERNAME,
// REALM, NONCE and MESSAGE-INTEGRITY), then release it (Refresh, LIFETIME 0). It proves a TURN server
// really serves the credentials Parley mints. Messages go through werift-ice's codec; its own TURN
// client is built for ICE gathering (it keeps its socket when the allocation fails, retries for ~6 s
// and leaves a refresh timer running), so sockets and deadlines are handled here.
import { createHash } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { lookup } from 'node:dns/promises';
import { connect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { Message, classes, methods, parseMessage } from 'werift-ice';
import type { TurnAddress } from './turnUrl.js';

export interface ProbeOptions {
  /** Deadline of each transaction (UDP retransmits every 250 ms until then). */
  timeoutMs?: number;
  /** turns: only: verify the server's certificate (default true). */
  verifyTls?: boolean;
}

export interface StunConnection {
  /** One transaction; resolves with the answer of the same transaction id. */
  request(message: Message, timeoutMs: number): Promise<Message>;
  close(): void;
}

/** A socket to a STUN/TURN server: TURN state (nonce, allocation) belongs to its 5-tuple. */
export async function openStunConnection(to: TurnAddress, opts: ProbeOptions = {}): Promise<StunConnection> {
  const { address, family } = await lookup(to.host);
  const waiting = new Map<string, (msg: Message) => void>();
  const accept = (data: Buffer) => {
    const msg = parseMessage(data);
    if (msg) waiting.get(msg.transactionIdHex)?.(msg);
  };
  let send: (bytes: Buffer) => void;
  let close: () => void;
  let failure: Error | undefined;
  if (to.transport === 'udp') {
    const sock = createSocket(family === 6 ? 'udp6' : 'udp4');
    sock.on('message', accept);
    sock.on('error', (err) => (failure = err));
    await new Promise<void>((resolve) => sock.bind(0, resolve));
    send = (bytes) => sock.send(bytes, to.port, address, () => {});
    close = () => sock.close();
  } else {
    const sock =
      to.transport === 'tls'
        ? tlsConnect({ port: to.port, host: address, servername: to.host, rejectUnauthorized: opts.verifyTls ?? true })
        : connect(to.port, address);
    const timer = setTimeout(() => sock.destroy(new Error(`no connection to ${to.host}:${to.port}`)), opts.timeoutMs ?? 2000);
    await new Promise<void>((resolve, reject) => {
      sock.once(to.transport === 'tls' ? 'secureConnect' : 'connect', resolve);
      sock.once('error', reject);
    }).finally(() => clearTimeout(timer));
    sock.on('error', (err) => (failure = err));
    // STUN over TCP: messages back to back, each as long as its header says.
    let buf = Buffer.alloc(0);
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 20 && buf.length >= 20 + buf.readUInt16BE(2)) {
        const len = 20 + buf.readUInt16BE(2);
        accept(buf.subarray(0, len));
        buf = buf.subarray(len);
      }
    });
    send = (bytes) => sock.write(bytes);
    close = () => sock.destroy();
  }
  return {
    request: (message, timeoutMs) =>
      new Promise((resolve, reject) => {
        const bytes = message.bytes;
        const id = message.transactionIdHex;
        const resend = to.transport === 'udp' ? setInterval(() => send(bytes), 250) : undefined;
        const timer = setTimeout(() => {
          clearInterval(resend);
          waiting.delete(id);
          reject(failure ?? new Error(`no answer from ${to.host}:${to.port}/${to.transport}`));
        }, timeoutMs);
        waiting.set(id, (msg) => {
          clearInterval(resend);
          clearTimeout(timer);
          waiting.delete(id);
          resolve(msg);
        });
        send(bytes);
      }),
    close,
  };
}

export type AllocateResult =
  | { ok: true; relayed: { address: string; port: number }; mapped: { address: string; port: number } }
  | { ok: false; code: number; reason: string };

/** An allocation held on its connection: further requests are signed as the Allocate was. */
export type Allocation = Extract<AllocateResult, { ok: true }> & { sign(message: Message): Message };

/**
 * Allocates a UDP relay on `conn` with a TURN REST credential and keeps it. Resolves with the relay
 * (and a signer for further requests on it), or with the server's refusal (its error code).
 */
export async function allocate(conn: StunConnection, username: string, password: string, timeoutMs: number): Promise<Allocation | Extract<AllocateResult, { ok: false }>> {
  const request = () => new Message(methods.ALLOCATE, classes.REQUEST).setAttribute('REQUESTED-TRANSPORT', 0x11000000) as Message;
  const challenge = await conn.request(request().addFingerprint(), timeoutMs);
  const [code, reason] = challenge.getAttributeValue('ERROR-CODE') ?? [];
  if (challenge.messageClass !== classes.ERROR || code !== 401) {
    return { ok: false, code: code ?? 0, reason: `expected a 401 challenge, got ${code ?? 'success'} ${reason ?? ''}`.trim() };
  }
  const realm: string = challenge.getAttributeValue('REALM');
  const nonce: Buffer = challenge.getAttributeValue('NONCE');
  const key = createHash('md5').update(`${username}:${realm}:${password}`).digest();
  const sign = (m: Message) => m.setAttribute('USERNAME', username).setAttribute('REALM', realm).setAttribute('NONCE', nonce).addMessageIntegrity(key).addFingerprint();
  const answer = await conn.request(sign(request()), timeoutMs);
  if (answer.messageClass !== classes.RESPONSE) {
    const [errCode, errReason] = answer.getAttributeValue('ERROR-CODE') ?? [0, 'no ERROR-CODE'];
    return { ok: false, code: errCode, reason: errReason };
  }
  const [rAddr, rPort] = answer.getAttributeValue('XOR-RELAYED-ADDRESS');
  const [mAddr, mPort] = answer.getAttributeValue('XOR-MAPPED-ADDRESS');
  return { ok: true, relayed: { address: rAddr, port: rPort }, mapped: { address: mAddr, port: mPort }, sign };
}

/**
 * Allocates a UDP relay with a TURN REST credential and releases it. Resolves with the relay, or with
 * the server's refusal (its error code); rejects when the server does not answer in time.
 */
export async function allocateRelay(to: TurnAddress, username: string, password: string, opts: ProbeOptions = {}): Promise<AllocateResult> {
  const timeoutMs = opts.timeoutMs ?? 2000;
  const conn = await openStunConnection(to, opts);
  try {
    const result = await allocate(conn, username, password, timeoutMs);
    if (!result.ok) return result;
    // Release the relay now rather than let it idle for its lifetime; a lost release only costs that.
    await conn.request(result.sign(new Message(methods.REFRESH, classes.REQUEST).setAttribute('LIFETIME', 0) as Message), timeoutMs).catch(() => {});
    return { ok: true, relayed: result.relayed, mapped: result.mapped };
  } finally {
    conn.close();
  }
}
