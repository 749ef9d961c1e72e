// A node whose start fails part-way closes what it had opened: here the embedded STUN server's
// port, taken before the database turned out to be unreachable, is free again.
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import pino from 'pino';
import { loadConfig } from '../src/config/env.ts';
import { createServices } from '../src/services.ts';

/** A UDP port nobody holds now. */
async function freeUdpPort(): Promise<number> {
  const socket = createSocket('udp4');
  await new Promise<void>((r) => socket.bind(0, '127.0.0.1', r));
  const { port } = socket.address();
  await new Promise<void>((r) => socket.close(() => r()));
  return port;
}

test('a start that fails at the database closes the STUN server it had opened', async () => {
  const stunPort = await freeUdpPort();
  const config = loadConfig({
    DATA_DIR: mkdtempSync(join(tmpdir(), 'parley-startup-')),
    HOST: '127.0.0.1',
    STUN_PORT: String(stunPort),
    // Nothing listens on port 1: the store cannot open.
    DATABASE_URL: 'postgres://parley@127.0.0.1:1/none',
    TURN_ENABLED: 'false',
  });
  await assert.rejects(createServices(config, pino({ level: 'silent' })));
  const again = createSocket('udp4');
  await new Promise<void>((resolve, reject) => {
    again.once('error', reject);
    again.bind(stunPort, '127.0.0.1', resolve);
  });
  again.close();
});
