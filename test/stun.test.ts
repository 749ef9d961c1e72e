// The embedded STUN server, reached through ice-config's default STUN entry. Requests and answers
// are built and read by hand here (RFC 5389 §6, §15.2), independently of the server's codec.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import { after, before, test } from 'node:test';
import { http, mintToken, startServer, type RunningServer } from './helpers/server.ts';

const COOKIE = 0x2112a442;

let server: RunningServer;
let stunPort: number;
let socket: Socket;
const received: Buffer[] = [];

before(async () => {
  server = await startServer(); // STUN_PORT=0: the server picks a free port and ice-config names it
  const token = await mintToken(server.baseUrl, server.devKey);
  const ice = await http(server.baseUrl, '/v1/realtime/ice-config', { token });
  const url: string = ice.body.iceServers.find((s: { urls: string[] }) => s.urls[0]!.startsWith('stun:')).urls[0];
  const m = /^stun:127\.0\.0\.1:(\d+)$/.exec(url);
  assert.ok(m, `default STUN entry points at the embedded server on loopback: ${url}`);
  stunPort = Number(m[1]);
  assert.notEqual(stunPort, 3478, 'the bound port, not the configured 0 or the default');
  socket = createSocket('udp4');
  socket.on('message', (msg) => received.push(msg));
  await new Promise<void>((r) => socket.bind(0, '127.0.0.1', r));
});

after(async () => {
  socket?.close();
  await server?.stop();
});

function bindingRequest(transactionId: Buffer, attributes: Buffer = Buffer.alloc(0), cookie = COOKIE): Buffer {
  const header = Buffer.alloc(8);
  header.writeUInt16BE(0x0001, 0); // Binding request
  header.writeUInt16BE(attributes.length, 2);
  header.writeUInt32BE(cookie, 4);
  return Buffer.concat([header, transactionId, attributes]);
}

/** Sends a datagram and returns the reply with that transaction id, or undefined if none comes within waitMs. */
async function exchange(datagram: Buffer, transactionId: Buffer, waitMs = 2000): Promise<Buffer | undefined> {
  const start = received.length;
  socket.send(datagram, stunPort, '127.0.0.1');
  const deadline = Date.now() + waitMs;
  while (Date.now() < deadline) {
    const reply = received.slice(start).find((r) => r.length >= 20 && r.subarray(8, 20).equals(transactionId));
    if (reply) return reply;
    await new Promise((r) => setTimeout(r, 20));
  }
  return undefined;
}

/** Reads the attributes of a STUN message as type → value. */
function attributes(msg: Buffer): Map<number, Buffer> {
  const out = new Map<number, Buffer>();
  for (let pos = 20; pos + 4 <= msg.length; ) {
    const type = msg.readUInt16BE(pos);
    const len = msg.readUInt16BE(pos + 2);
    out.set(type, msg.subarray(pos + 4, pos + 4 + len));
    pos += 4 + len + ((4 - (len % 4)) % 4);
  }
  return out;
}

function xorMappedAddress(value: Buffer): { family: number; address: string; port: number } {
  const port = value.readUInt16BE(2) ^ (COOKIE >>> 16);
  const ip = (value.readUInt32BE(4) ^ COOKIE) >>> 0;
  return { family: value[1]!, address: [ip >>> 24, (ip >>> 16) & 255, (ip >>> 8) & 255, ip & 255].join('.'), port };
}

async function assertAnswersBinding(): Promise<void> {
  const tid = randomBytes(12);
  const reply = await exchange(bindingRequest(tid), tid);
  assert.ok(reply, 'a Binding success response arrives');
  assert.equal(reply.readUInt16BE(0), 0x0101, 'Binding success response');
  assert.equal(reply.readUInt32BE(4), COOKIE, 'magic cookie');
  assert.equal(reply.readUInt16BE(2), reply.length - 20, 'length field matches the body');
  const xma = attributes(reply).get(0x0020);
  assert.ok(xma, 'XOR-MAPPED-ADDRESS present');
  const mine = socket.address();
  assert.deepEqual(xorMappedAddress(xma), { family: 1, address: '127.0.0.1', port: mine.port });
}

test('a Binding request gets XOR-MAPPED-ADDRESS = the client\'s own 127.0.0.1:port', async () => {
  await assertAnswersBinding();
});

test('a second client socket gets its own address back', async () => {
  const other = createSocket('udp4');
  await new Promise<void>((r) => other.bind(0, '127.0.0.1', r));
  try {
    const tid = randomBytes(12);
    const reply = await new Promise<Buffer>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no reply')), 2000);
      other.on('message', (msg) => {
        clearTimeout(timer);
        resolve(msg);
      });
      other.send(bindingRequest(tid), stunPort, '127.0.0.1');
    });
    assert.deepEqual(reply.subarray(8, 20), tid);
    assert.equal(xorMappedAddress(attributes(reply).get(0x0020)!).port, other.address().port);
    assert.notEqual(other.address().port, socket.address().port);
  } finally {
    other.close();
  }
});

test('an unknown comprehension-required attribute gets a 420 error naming it', async () => {
  const tid = randomBytes(12);
  const attr = Buffer.alloc(8);
  attr.writeUInt16BE(0x0077, 0); // below 0x8000: comprehension-required, not defined
  attr.writeUInt16BE(4, 2);
  const reply = await exchange(bindingRequest(tid, attr), tid);
  assert.ok(reply);
  assert.equal(reply.readUInt16BE(0), 0x0111, 'Binding error response');
  const attrs = attributes(reply);
  const code = attrs.get(0x0009)!;
  assert.equal(code[2]! * 100 + code[3]!, 420);
  assert.equal(attrs.get(0x000a)!.readUInt16BE(0), 0x0077, 'UNKNOWN-ATTRIBUTES');
});

test('malformed packets are ignored and the server keeps answering', async () => {
  const tid = randomBytes(12);
  const good = bindingRequest(tid);
  const malformed: [string, Buffer][] = [
    ['random bytes', randomBytes(64)],
    ['empty datagram', Buffer.alloc(0)],
    ['truncated header', good.subarray(0, 12)],
    ['wrong magic cookie', bindingRequest(tid, Buffer.alloc(0), 0xdeadbeef)],
    ['length field longer than the datagram', Buffer.concat([good.subarray(0, 2), Buffer.from([0, 8]), good.subarray(4)])],
    ['attribute running past the end', bindingRequest(tid, Buffer.from([0x00, 0x20, 0x00, 0x40]))],
    ['a Binding response, not a request', Buffer.concat([Buffer.from([0x01, 0x01]), good.subarray(2)])],
    ['a TURN Allocate request', Buffer.concat([Buffer.from([0x00, 0x03]), good.subarray(2)])],
    ['first two bits set (not STUN)', Buffer.concat([Buffer.from([0xc0, 0x01]), good.subarray(2)])],
  ];
  for (const [what, datagram] of malformed) {
    assert.equal(await exchange(datagram, tid, 300), undefined, `${what}: no reply`);
  }
  for (let i = 0; i < 200; i++) socket.send(randomBytes(1 + (i % 120)), stunPort, '127.0.0.1');
  await assertAnswersBinding();
  assert.equal(server.proc.exitCode, null, 'the server is still running');
  const health = await http(server.baseUrl, '/healthz');
  assert.equal(health.status, 200);
});
