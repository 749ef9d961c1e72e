// The SIP listener's TLS port counts a source's connections from their TCP open, before any
// handshake (the certificate is made by openssl at test time).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import pino from 'pino';
import { SipSockets } from '../../src/sip/listener.ts';
import { makeCertificate } from '../helpers/tls.ts';
import { until } from '../helpers/wait.ts';

/** Opens `n` connections from `localAddress`; resolves once each is open or closed. */
async function open(port: number, localAddress: string, n: number): Promise<{ sockets: Socket[]; closed: () => number }> {
  let closed = 0;
  const sockets = Array.from({ length: n }, () => connect({ port, host: '127.0.0.1', localAddress }));
  await Promise.all(
    sockets.map((s) => {
      s.on('error', () => {});
      s.on('close', () => closed++);
      return new Promise((resolve) => s.once('connect', resolve).once('close', resolve));
    }),
  );
  return { sockets, closed: () => closed };
}

test('the listener: TLS connections count from their TCP open (a handshake held open holds a place)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-sip-tls-'));
  const { cert, key } = makeCertificate(dir);
  const refused: string[] = [];
  const listener = await SipSockets.open({
    host: '127.0.0.1',
    port: 0,
    tls: { port: 0, cert: readFileSync(cert, 'utf8'), key: readFileSync(key, 'utf8') },
    received: () => {},
    carriesCall: () => false,
    maxConnectionsPerSource: 2,
    unlimitedSource: () => false,
    idleMs: 30_000,
    refusedConnection: () => refused.push('refused'),
    log: pino({ level: 'silent' }),
  });
  try {
    // Four TCP connections to the TLS port that never start a handshake.
    const tls = await open(listener.ports.tls!, '127.0.0.1', 4);
    await until('the two past the share closed', tls.closed, (n) => n === 2);
    assert.equal(refused.length, 2);
    for (const s of tls.sockets) s.destroy();
    await new Promise((resolve) => setTimeout(resolve, 200));
    const again = await open(listener.ports.tls!, '127.0.0.1', 2);
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(again.closed(), 0, 'their places were freed');
    for (const s of again.sockets) s.destroy();
  } finally {
    await listener.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
