// Runs a real coturn (Debian's turnserver, installed by scripts/setup.sh) on 127.0.0.1 with a
// temporary config, and asks it for a relay with Parley's own TURN client (src/ice/turnProbe.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Message, classes, methods } from 'werift-ice';
import { allocate, allocateRelay as allocateRelayAt, openStunConnection, type AllocateResult } from '../../src/ice/turnProbe.ts';
import { freePort as freePortOn } from '../../src/ice/ports.ts';
import type { TurnAddress } from '../../src/ice/turnUrl.ts';

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
export const freePort = () => freePortOn('127.0.0.1');

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
    const conn = await openStunConnection({ host: '127.0.0.1', port, transport: 'udp' });
    const udpOk = await conn.request(new Message(methods.BINDING, classes.REQUEST), 200).then(
      (r) => r.messageClass === classes.RESPONSE,
      () => false,
    );
    conn.close();
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

/** A relay from coturn on 127.0.0.1:port (released at once), as Parley's TURN checks ask for one. */
export function allocateRelay(
  to: { port: number; transport?: TurnAddress['transport'] },
  username: string,
  password: string,
): Promise<AllocateResult> {
  // Test servers use self-signed certificates.
  return allocateRelayAt({ host: '127.0.0.1', port: to.port, transport: to.transport ?? 'udp' }, username, password, { timeoutMs: 3000, verifyTls: false });
}

export interface HeldRelay {
  result: AllocateResult;
  /** Asks coturn for permission to relay to `peer` (CreatePermission): 0 when granted, else its error code. */
  permit(peer: string): Promise<number>;
  release(): Promise<void>;
}

/** A relay from coturn on 127.0.0.1:port (UDP), held until release(). */
export async function holdRelay(port: number, username: string, password: string): Promise<HeldRelay> {
  const conn = await openStunConnection({ host: '127.0.0.1', port, transport: 'udp' }, { timeoutMs: 3000 });
  const result = await allocate(conn, username, password, 3000);
  const signed = (m: Message) => (result.ok ? result.sign(m) : m);
  return {
    result: result.ok ? { ok: true, relayed: result.relayed, mapped: result.mapped } : result,
    async permit(peer) {
      const request = new Message(methods.CREATE_PERMISSION, classes.REQUEST).setAttribute('XOR-PEER-ADDRESS', [peer, 9]) as Message;
      const answer = await conn.request(signed(request), 3000);
      return answer.messageClass === classes.RESPONSE ? 0 : ((answer.getAttributeValue('ERROR-CODE') ?? [-1])[0] as number);
    },
    async release() {
      if (result.ok) await conn.request(signed(new Message(methods.REFRESH, classes.REQUEST).setAttribute('LIFETIME', 0) as Message), 3000).catch(() => {});
      conn.close();
    },
  };
}
