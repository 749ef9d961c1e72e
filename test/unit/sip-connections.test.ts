// Each source address's share of the SIP door's stream connections: past it a new connection is
// closed as it opens (and counted), a closed one gives its place back, other addresses and
// unlimited ones (a trunk's) are not held, and 0 turns the share off (the TLS port, with a
// certificate openssl makes: test/engines/sip-tls-connections.test.ts).
import assert from 'node:assert/strict';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { test } from 'node:test';
import { ConnectionsBySource } from '../../src/sip/connectionsBySource.ts';
import { until } from '../helpers/wait.ts';

async function listening(sources: ConnectionsBySource): Promise<{ server: Server; port: number; held: Set<Socket> }> {
  const held = new Set<Socket>();
  const server = createServer((socket) => {
    if (!sources.admit(socket)) return;
    held.add(socket);
    socket.on('close', () => held.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { server, port: (server.address() as { port: number }).port, held };
}

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

test("past its share an address's new connections are closed; a closed one frees its place; another address is not held", async () => {
  let refused = 0;
  const { server, port, held } = await listening(new ConnectionsBySource(3, () => false, () => refused++));
  try {
    const first = await open(port, '127.0.0.1', 5);
    await until('the two past the share closed', first.closed, (n) => n === 2);
    assert.equal(refused, 2);
    const other = await open(port, '127.0.0.2', 3);
    await until('the other address held', () => held.size, (n) => n === 6);
    first.sockets.find((s) => !s.destroyed && s.readyState === 'open')!.destroy();
    await until('a place freed', () => held.size, (n) => n === 5);
    const again = await open(port, '127.0.0.1', 1);
    await until('the freed place taken', () => held.size, (n) => n === 6);
    assert.equal(again.closed(), 0);
    for (const s of [...first.sockets, ...other.sockets, ...again.sockets]) s.destroy();
  } finally {
    server.close();
  }
});

test('unlimited sources (a trunk) and a share of 0 hold no count', async () => {
  for (const sources of [new ConnectionsBySource(1, (address) => address === '127.0.0.1', () => assert.fail('refused')), new ConnectionsBySource(0, () => false, () => assert.fail('refused'))]) {
    const { server, port, held } = await listening(sources);
    try {
      const many = await open(port, '127.0.0.1', 10);
      await until('all held', () => held.size, (n) => n === 10);
      assert.equal(many.closed(), 0);
      for (const s of many.sockets) s.destroy();
    } finally {
      server.close();
    }
  }
});
