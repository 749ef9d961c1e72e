// Runs a real coturn (Debian's turnserver, installed by scripts/setup.sh --test) on 127.0.0.1 with a
// temporary config, and a minimal TURN client (Allocate with long-term credentials, RFC 5766 §6) to
// ask it for a relay. STUN/TURN messages go through werift-ice's codec.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { connect as tlsConnect } from 'node:tls';
import { join } from 'node:path';
import { Message, classes, methods, parseMessage } from 'werift-ice';

export interface Coturn {
  /** The plain (UDP and TCP) listening port. */
  port: number;
  /** coturn's own log so far (for failure messages). */
  log(): string;
  /** Stops coturn and starts it again on the same port with another config (e.g. after a secret rotation). */
  restart(config: string): Promise<void>;
  stop(): Promise<void>;
}

/** A port free for both UDP and TCP on 127.0.0.1, for coturn's listening port. */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const tcp = createServer();
    const port = await new Promise<number>((resolve, reject) => {
      tcp.once('error', reject);
      tcp.listen(0, '127.0.0.1', () => resolve((tcp.address() as { port: number }).port));
    });
    const udp = createSocket('udp4');
    const udpFree = await new Promise<boolean>((resolve) => {
      udp.once('error', () => resolve(false));
      udp.bind(port, '127.0.0.1', () => resolve(true));
    });
    udp.close();
    await new Promise((r) => tcp.close(r));
    if (udpFree) return port;
  }
  throw new Error('no port free for both UDP and TCP');
}

/**
 * Starts turnserver with `config` (which must set listening-port) plus what a test instance needs:
 * loopback only, relaying from 127.0.0.1, its own pid file and user database, logs to stdout.
 */
export async function startCoturn(config: string): Promise<Coturn> {
  const port = Number(/^listening-port=(\d+)$/m.exec(config)?.[1]);
  if (!port) throw new Error('the coturn config must set listening-port');
  const dir = mkdtempSync(join(tmpdir(), 'parley-coturn-'));
  let proc: ChildProcess | undefined;
  let log = '';

  const launch = async (text: string) => {
    const file = join(dir, 'turnserver.conf');
    const testLines = [
      '# test instance',
      'listening-ip=127.0.0.1',
      'relay-ip=127.0.0.1',
      `pidfile=${join(dir, 'turnserver.pid')}`,
      `userdb=${join(dir, 'turndb')}`,
      'log-file=stdout',
      'simple-log',
    ];
    writeFileSync(file, `${text}\n${testLines.join('\n')}\n`, { mode: 0o600 });
    const child = spawn('turnserver', ['-c', file], { stdio: ['ignore', 'pipe', 'pipe'] });
    proc = child;
    // A test process that dies early must not leave coturn running.
    const killOnExit = () => {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    };
    process.once('exit', killOnExit);
    child.once('exit', () => process.off('exit', killOnExit));
    child.stdout!.on('data', (d) => (log += d));
    child.stderr!.on('data', (d) => (log += d));
    const exited = new Promise<never>((_, reject) =>
      child.once('exit', (code) => reject(new Error(`turnserver exited with ${code}:\n${log.slice(-3000)}`))),
    );
    exited.catch(() => {});
    await Promise.race([waitReady(port), exited]);
  };

  const stop = async () => {
    const child = proc;
    proc = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
    await gone;
    clearTimeout(timer);
  };

  await launch(config);
  return {
    port,
    log: () => log,
    restart: async (text) => {
      await stop();
      await launch(text);
    },
    stop: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Ready when coturn answers a STUN Binding request on UDP and accepts TCP connections. */
async function waitReady(port: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const binding = new Message(methods.BINDING, classes.REQUEST);
    const udpOk = await stunRequest({ port, transport: 'udp' }, binding, 200).then(
      (r) => r.messageClass === classes.RESPONSE,
      () => false,
    );
    const tcpOk = udpOk && (await tcpAccepts(port));
    if (tcpOk) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`coturn did not become ready on 127.0.0.1:${port}`);
}

function tcpAccepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

interface Endpoint {
  port: number;
  /** tls: TURN over TLS (turns:), certificate not verified (tests use a self-signed one). */
  transport: 'udp' | 'tcp' | 'tls';
}

interface StunConnection {
  /** One transaction (UDP retransmits every 500 ms); resolves with the answer of the same transaction id. */
  request(message: Message, timeoutMs?: number): Promise<Message>;
  close(): void;
}

/** A STUN/TURN client socket to coturn on 127.0.0.1: TURN state (nonce, allocation) belongs to its 5-tuple. */
async function openStunConnection(to: Endpoint): Promise<StunConnection> {
  const waiting = new Map<string, (msg: Message) => void>();
  const accept = (data: Buffer) => {
    const msg = parseMessage(data);
    if (msg) waiting.get(msg.transactionIdHex)?.(msg);
  };
  let send: (bytes: Buffer) => void;
  let close: () => void;
  let failure: Error | undefined;
  if (to.transport === 'udp') {
    const sock = createSocket('udp4');
    sock.on('message', accept);
    sock.on('error', (err) => (failure = err));
    await new Promise<void>((r) => sock.bind(0, '127.0.0.1', r));
    send = (bytes) => sock.send(bytes, to.port, '127.0.0.1');
    close = () => sock.close();
  } else {
    const sock = to.transport === 'tls' ? tlsConnect({ port: to.port, host: '127.0.0.1', rejectUnauthorized: false }) : connect(to.port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => {
      sock.once(to.transport === 'tls' ? 'secureConnect' : 'connect', resolve);
      sock.once('error', reject);
    });
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
    request: (message, timeoutMs = 3000) =>
      new Promise((resolve, reject) => {
        const bytes = message.bytes;
        const id = message.transactionIdHex;
        const resend = to.transport === 'udp' ? setInterval(() => send(bytes), 500) : undefined;
        const timer = setTimeout(() => {
          clearInterval(resend);
          waiting.delete(id);
          reject(failure ?? new Error(`no answer from 127.0.0.1:${to.port}/${to.transport}`));
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

/** A single transaction on a connection of its own. */
async function stunRequest(to: Endpoint, message: Message, timeoutMs?: number): Promise<Message> {
  const conn = await openStunConnection(to);
  try {
    return await conn.request(message, timeoutMs);
  } finally {
    conn.close();
  }
}

export type AllocateResult =
  | { ok: true; relayed: { address: string; port: number }; mapped: { address: string; port: number } }
  | { ok: false; code: number; reason: string };

/**
 * Asks coturn on 127.0.0.1:port for a UDP relay with a TURN REST credential: the unauthenticated
 * Allocate learns realm and nonce (401), the second carries USERNAME, REALM, NONCE and
 * MESSAGE-INTEGRITY keyed with MD5(username:realm:password).
 */
export async function allocateRelay(
  to: { port: number; transport?: Endpoint['transport'] },
  username: string,
  password: string,
): Promise<AllocateResult> {
  const endpoint: Endpoint = { port: to.port, transport: to.transport ?? 'udp' };
  const allocate = () => new Message(methods.ALLOCATE, classes.REQUEST).setAttribute('REQUESTED-TRANSPORT', 0x11000000) as Message;
  const conn = await openStunConnection(endpoint);
  try {
    return await authenticatedAllocate(conn, allocate, username, password);
  } finally {
    conn.close();
  }
}

async function authenticatedAllocate(conn: StunConnection, allocate: () => Message, username: string, password: string): Promise<AllocateResult> {
  const challenge = await conn.request(allocate().addFingerprint());
  const [code, reason] = challenge.getAttributeValue('ERROR-CODE') ?? [];
  if (challenge.messageClass !== classes.ERROR || code !== 401) throw new Error(`expected a 401 challenge, got ${code} ${reason}`);
  const realm: string = challenge.getAttributeValue('REALM');
  const nonce: Buffer = challenge.getAttributeValue('NONCE');
  const key = createHash('md5').update(`${username}:${realm}:${password}`).digest();
  const request = allocate().setAttribute('USERNAME', username).setAttribute('REALM', realm).setAttribute('NONCE', nonce) as Message;
  const answer = await conn.request(request.addMessageIntegrity(key).addFingerprint());
  if (answer.messageClass === classes.RESPONSE) {
    const [rAddr, rPort] = answer.getAttributeValue('XOR-RELAYED-ADDRESS');
    const [mAddr, mPort] = answer.getAttributeValue('XOR-MAPPED-ADDRESS');
    return { ok: true, relayed: { address: rAddr, port: rPort }, mapped: { address: mAddr, port: mPort } };
  }
  const [errCode, errReason] = answer.getAttributeValue('ERROR-CODE') ?? [0, 'no ERROR-CODE'];
  return { ok: false, code: errCode, reason: errReason };
}
