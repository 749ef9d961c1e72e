// TURN that really works: a real coturn on loopback, configured by `parley turn config`, accepts the
// credentials ice-config mints and refuses forged, expired and borrowed ones; secret rotation; calls
// whose client may only use relay candidates (Node libwebrtc and headless Chromium); the server's own
// peer reaching clients through TURN with a public address advertised (behind NAT).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { launchBrowser, callFromPage } from './helpers/browser.ts';
import { allocateRelay, freePort, startCoturn, type Coturn } from './helpers/coturn.ts';
import { Message, classes, methods } from 'werift-ice';
import { openStunConnection } from '../src/ice/turnProbe.ts';
import { attachTone, inboundAudio, openCall, type RtcClient } from './helpers/rtcClient.ts';
import { PARLEY, http, mintToken, startServer, type RunningServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

const ROOT = resolve(import.meta.dirname, '..');
const run = promisify(execFile);
const NEW_SECRET = 'turn-secret-new-0123456789abcdef';
const OLD_SECRET = 'turn-secret-old-0123456789abcdef';
const REALM = 'parley.test';

/** Settings shared by Parley and `parley turn config` for a coturn on 127.0.0.1:port. */
function turnEnv(port: number, secrets: string[]): Record<string, string> {
  return {
    TURN_URLS: `turn:127.0.0.1:${port}?transport=udp,turn:127.0.0.1:${port}?transport=tcp`,
    TURN_SECRETS: secrets.join(','),
    TURN_REALM: REALM,
    TURN_ALLOW_LOOPBACK_PEERS: 'true',
  };
}

/** `parley turn config` with these settings (no server needed). */
async function turnConfig(env: Record<string, string>): Promise<string> {
  const { stdout } = await run(process.execPath, [...PARLEY, 'turn', 'config'], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: '/nonexistent-parley-data', ...env },
  });
  return stdout;
}

type TurnEntry = { urls: string[]; username: string; credential: string };

async function turnEntry(server: RunningServer, token?: string): Promise<TurnEntry> {
  const r = await http(server.baseUrl, '/v1/realtime/ice-config', { token: token ?? (await mintToken(server.baseUrl, server.devKey)) });
  assert.equal(r.status, 200);
  const turn = r.body.iceServers.find((s: TurnEntry) => s.urls.some((u) => u.startsWith('turn:')));
  assert.ok(turn, 'ice-config has a TURN entry');
  return turn;
}


/** Types of the selected candidate pair, from the Node client's getStats(). */
async function selectedPair(client: RtcClient): Promise<{ local?: string; remote?: string }> {
  const stats = await client.pc.getStats();
  const byId = new Map<string, any>();
  let pairId: string | undefined;
  stats.forEach((s: any) => {
    byId.set(s.id, s);
    if (s.type === 'transport' && s.selectedCandidatePairId) pairId = s.selectedCandidatePairId;
  });
  let pair = pairId ? byId.get(pairId) : undefined;
  pair ??= [...byId.values()].find((s) => s.type === 'candidate-pair' && s.state === 'succeeded' && s.nominated);
  return { local: byId.get(pair?.localCandidateId)?.candidateType, remote: byId.get(pair?.remoteCandidateId)?.candidateType };
}

const candidateTypes = (sdp: string) => [...sdp.matchAll(/^a=candidate:.* typ (\w+)/gm)].map((m) => m[1]);

let coturn: Coturn;
let server: RunningServer;

before(async () => {
  const port = await freePort();
  const generated = await turnConfig(turnEnv(port, [NEW_SECRET, OLD_SECRET]));
  // 127.0.0.2 plays an address coturn must not reach (the NAT test's server host); 127.0.0.1 stays allowed.
  coturn = await startCoturn(`${generated}denied-peer-ip=127.0.0.2\n`);
  // Started after coturn: Parley hands out only the TURN servers that answer its checks.
  server = await startServer(turnEnv(port, [NEW_SECRET, OLD_SECRET]));
});

after(async () => {
  await server?.stop();
  await coturn?.stop();
});

describe('parley turn config', () => {
  test('REST-API mode with every secret, realm, ports, relay range, hardening and denied private peers', async () => {
    const text = await turnConfig({
      TURN_URLS: 'turn:turn.example.com:3478?transport=udp,turn:turn.example.com:3478?transport=tcp,turns:turn.example.com:443?transport=tcp,turns:turn.example.com:5349?transport=tcp',
      TURN_SECRETS: `${NEW_SECRET},${OLD_SECRET}`,
      TURN_REALM: 'turn.example.com',
      TURN_RELAY_PORT_RANGE: '50000-50999',
      TURN_TLS_CERT: '/etc/letsencrypt/live/turn.example.com/fullchain.pem',
      TURN_TLS_KEY: '/etc/letsencrypt/live/turn.example.com/privkey.pem',
      TURN_ALLOWED_PEER_IPS: '10.0.0.5',
    });
    const lines = text.split('\n').filter((l) => l && !l.startsWith('#'));
    assert.ok(lines.includes('use-auth-secret'));
    assert.deepEqual(lines.filter((l) => l.startsWith('static-auth-secret=')), [`static-auth-secret=${NEW_SECRET}`, `static-auth-secret=${OLD_SECRET}`]);
    for (const l of [
      'realm=turn.example.com',
      'listening-port=3478',
      'tls-listening-port=443',
      'alt-tls-listening-port=5349',
      'cert=/etc/letsencrypt/live/turn.example.com/fullchain.pem',
      'pkey=/etc/letsencrypt/live/turn.example.com/privkey.pem',
      'min-port=50000',
      'max-port=50999',
      'no-cli',
      'fingerprint',
      'denied-peer-ip=10.0.0.0-10.255.255.255',
      'denied-peer-ip=192.168.0.0-192.168.255.255',
      'denied-peer-ip=172.16.0.0-172.31.255.255',
      'denied-peer-ip=127.0.0.0-127.255.255.255',
      'denied-peer-ip=::1',
      'allowed-peer-ip=10.0.0.5',
    ]) {
      assert.ok(lines.includes(l), `${l} in:\n${text}`);
    }
    assert.ok(!lines.includes('allow-loopback-peers'), 'loopback peers refused by default');
    assert.ok(!lines.includes('no-tls'), 'TLS listeners on for turns:');
  });

  test('TURN_ALLOW_LOOPBACK_PEERS lets coturn relay to loopback; no turns: URL turns TLS off', async () => {
    const lines = (await turnConfig(turnEnv(3479, [NEW_SECRET]))).split('\n');
    assert.ok(lines.includes('allow-loopback-peers'));
    assert.ok(!lines.some((l) => l.startsWith('denied-peer-ip=127.')));
    assert.ok(lines.includes('denied-peer-ip=10.0.0.0-10.255.255.255'), 'private ranges still denied');
    assert.ok(lines.includes('no-tls') && lines.includes('no-dtls'));
  });

  test('with a turns: URL, coturn serves TURN over TLS with the configured certificate', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'parley-turn-tls-'));
    const plain = await freePort();
    let tls = await freePort();
    while (tls === plain) tls = await freePort();
    try {
      await run('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
        '-keyout', join(dir, 'privkey.pem'), '-out', join(dir, 'fullchain.pem')]);
      const env = {
        ...turnEnv(plain, [NEW_SECRET]),
        TURN_URLS: `turn:127.0.0.1:${plain}?transport=udp,turns:127.0.0.1:${tls}?transport=tcp`,
        TURN_TLS_CERT: join(dir, 'fullchain.pem'),
        TURN_TLS_KEY: join(dir, 'privkey.pem'),
      };
      const tlsCoturn = await startCoturn(await turnConfig(env));
      try {
        const username = `${Math.floor(Date.now() / 1000) + 600}:tls-check.nonce`;
        const r = await allocateRelay({ port: tls, transport: 'tls' }, username, createHmac('sha1', NEW_SECRET).update(username).digest('base64'));
        assert.ok(r.ok, `${JSON.stringify(r)}\n${tlsCoturn.log().slice(-2000)}`);
      } finally {
        await tlsCoturn.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('settings coturn cannot express are refused with a clear message', async () => {
    await assert.rejects(turnConfig({ TURN_SECRETS: NEW_SECRET, TURN_URLS: 'turn:a:1000,turn:a:1001,turn:a:1002' }), (err: any) => {
      assert.equal(err.code, 2);
      assert.match(err.stderr, /3 turn: ports .* coturn serves at most two/);
      return true;
    });
  });
});

describe('coturn accepts what ice-config mints', () => {
  test('credentials from ice-config allocate a relay over UDP and over TCP', async () => {
    const turn = await turnEntry(server);
    assert.deepEqual(turn.urls, [`turn:127.0.0.1:${coturn.port}?transport=udp`, `turn:127.0.0.1:${coturn.port}?transport=tcp`]);
    for (const transport of ['udp', 'tcp'] as const) {
      const r = await allocateRelay({ port: coturn.port, transport }, turn.username, turn.credential);
      assert.ok(r.ok, `${transport}: ${JSON.stringify(r)}\n${coturn.log().slice(-2000)}`);
      assert.equal(r.relayed.address, '127.0.0.1');
      assert.ok(r.relayed.port >= 49152 && r.relayed.port <= 65535, 'a port of the configured relay range');
      assert.equal(r.mapped.address, '127.0.0.1');
    }
  });

  test('a wrong secret, an expired username and another token\'s username are refused', async () => {
    const token = await mintToken(server.baseUrl, server.devKey);
    const turn = await turnEntry(server, token);
    const [expiry, label] = turn.username.split(/:(.*)/s) as [string, string];

    const forged = createHmac('sha1', 'not-the-secret-0123456789abcdef').update(turn.username).digest('base64');
    const wrongSecret = await allocateRelay({ port: coturn.port }, turn.username, forged);
    assert.deepEqual(wrongSecret, { ok: false, code: 401, reason: 'Unauthorized' }, 'wrong secret');

    // Correctly signed, but its time has passed.
    const expired = `${Math.floor(Date.now() / 1000) - 60}:${label}`;
    const expiredResult = await allocateRelay({ port: coturn.port }, expired, createHmac('sha1', NEW_SECRET).update(expired).digest('base64'));
    assert.equal(expiredResult.ok, false, 'expired username');
    assert.equal((expiredResult as { code: number }).code, 401);

    // This response's credential with the username another token was given.
    const other = await turnEntry(server);
    assert.notEqual(other.username, turn.username);
    const borrowed = await allocateRelay({ port: coturn.port }, other.username, turn.credential);
    assert.equal(borrowed.ok, false, "another token's username");
    assert.equal((borrowed as { code: number }).code, 401);

    // The genuine pair still works (the refusals above were about the credential, not coturn).
    assert.ok(Number(expiry) > Date.now() / 1000);
    assert.ok((await allocateRelay({ port: coturn.port }, turn.username, turn.credential)).ok);
  });

  test('rotation: old-secret credentials work while coturn lists both secrets, and are refused once it is removed', async () => {
    const port = await freePort();
    // Before the rotation a node signed with the old secret and gave out this credential.
    // (Nothing answers on that port yet: the checks are off so that ice-config hands it out all the same.)
    const before = await startServer({ ...turnEnv(port, [OLD_SECRET]), TURN_CHECK_INTERVAL_MS: '0' });
    const oldCredential = await turnEntry(before).finally(() => before.stop());
    // Step 1: coturn accepts both; Parley signs with the new one.
    const rotating = await startCoturn(await turnConfig(turnEnv(port, [NEW_SECRET, OLD_SECRET])));
    try {
      // The main server already runs with TURN_SECRETS=new,old: its credentials are signed with the new one.
      const newCredential = await turnEntry(server);
      assert.equal(newCredential.credential, createHmac('sha1', NEW_SECRET).update(newCredential.username).digest('base64'));
      assert.ok((await allocateRelay({ port }, oldCredential.username, oldCredential.credential)).ok, 'old credential during rotation');
      assert.ok((await allocateRelay({ port }, newCredential.username, newCredential.credential)).ok, 'new credential during rotation');
      // Step 2 (after TURN_CREDENTIAL_TTL_SECONDS): the old secret is removed and coturn restarted.
      await rotating.restart(await turnConfig(turnEnv(port, [NEW_SECRET])));
      const refused = await allocateRelay({ port }, oldCredential.username, oldCredential.credential);
      assert.equal(refused.ok, false, 'old credential after the old secret is removed');
      assert.equal((refused as { code: number }).code, 401);
      assert.ok((await allocateRelay({ port }, newCredential.username, newCredential.credential)).ok, 'new credential still works');
    } finally {
      await rotating.stop();
    }
  });
});

describe('calls through coturn', () => {
  test('Node client with iceTransportPolicy "relay": connects through coturn, data channel opens, audio flows both ways', async () => {
    const token = await mintToken(server.baseUrl, server.devKey);
    const ice = await http(server.baseUrl, '/v1/realtime/ice-config', { token });
    const client = await openCall(server.baseUrl, token, { iceServers: ice.body.iceServers, iceTransportPolicy: 'relay', params: { model: 'audio-echo' } });
    let stopTone = () => {};
    try {
      const offered = candidateTypes(client.offerSdp);
      assert.ok(offered.length > 0 && offered.every((t) => t === 'relay'), `only relay candidates offered: ${offered}`);
      await client.waitConnected(15_000);
      await client.waitChannelOpen();
      assert.equal((await client.nextEvent('session.created')).session.id, client.conversationId);
      stopTone = await attachTone(client);
      const inbound = await until('echoed audio through the relay', () => inboundAudio(client), (s) => s.packetsReceived >= 50);
      assert.ok(inbound.packetsReceived >= 50);
      assert.equal((await selectedPair(client)).local, 'relay', 'the selected pair uses the TURN relay');
    } finally {
      stopTone();
      client.close();
    }
  });

  test('headless Chromium with iceTransportPolicy "relay": connects through coturn and receives audio', async () => {
    const browser = await launchBrowser();
    try {
      const page = await browser.openPage(server.baseUrl);
      const call = await callFromPage(page, {
        apiKey: server.devKey,
        iceTransportPolicy: 'relay',
        params: { model: 'audio-echo' },
        minInboundPackets: 50,
      });
      assert.ok(call.iceServers.some((s) => s.urls.some((u) => u.startsWith(`turn:127.0.0.1:${coturn.port}`))));
      assert.ok(call.offeredCandidateTypes.length > 0 && call.offeredCandidateTypes.every((t) => t === 'relay'), `${call.offeredCandidateTypes}`);
      assert.equal(call.connectionState, 'connected');
      assert.equal(call.dataChannelState, 'open');
      assert.equal(call.selectedPair?.local, 'relay');
      assert.ok(call.events.some((e) => e.type === 'session.created' && e.session.id === call.conversationId));
      assert.ok(call.outboundAudio!.packetsSent > 0, 'the fake microphone is sent');
      assert.ok(call.inboundAudio!.packetsReceived >= 50, 'the echo comes back through the relay');
    } finally {
      await browser.close();
    }
  });

  test('server behind NAT: ICE_PUBLIC_IP is advertised and the server reaches the client through its own TURN', async () => {
    // The server's host address 127.0.0.2 is unreachable through coturn (denied peer), and the public
    // address it advertises is unroutable: only the relay candidate it allocates itself can work.
    const nat = await startServer({
      ...turnEnv(coturn.port, [NEW_SECRET]),
      ICE_BIND_ADDRESS: '127.0.0.2',
      ICE_PUBLIC_IP: '203.0.113.7',
      SERVER_ICE_SERVERS: `turn:127.0.0.1:${coturn.port}?transport=udp`,
    });
    try {
      const token = await mintToken(nat.baseUrl, nat.devKey);
      const ice = await http(nat.baseUrl, '/v1/realtime/ice-config', { token });
      // The embedded STUN server is announced at the public address too (unreachable here, so the
      // client is given only the TURN entry: an unanswered STUN server would hold its gathering up).
      assert.equal(ice.body.iceServers[0].urls[0].replace(/:\d+$/, ''), 'stun:203.0.113.7');
      const turnOnly = ice.body.iceServers.filter((s: TurnEntry) => s.username);
      const client = await openCall(nat.baseUrl, token, { iceServers: turnOnly, iceTransportPolicy: 'relay', params: { model: 'audio-echo' } });
      try {
        const hosts = [...client.answerSdp.matchAll(/^a=candidate:\S+ \d+ \S+ \d+ (\S+) \d+ typ host/gm)].map((m) => m[1]);
        assert.ok(hosts.length > 0 && hosts.every((h) => h === '203.0.113.7'), `host candidates advertise ICE_PUBLIC_IP: ${hosts}`);
        assert.ok(candidateTypes(client.answerSdp).includes('relay'), "the answer carries the server's own relay candidate");
        await client.waitConnected(15_000);
        await client.waitChannelOpen();
        assert.deepEqual(await selectedPair(client), { local: 'relay', remote: 'relay' });
      } finally {
        client.close();
      }
    } finally {
      await nat.stop();
    }
  });
});

/** The turnserver processes a Parley process runs as its children. */
async function coturnChildren(parent: RunningServer): Promise<number[]> {
  const { stdout } = await run('pgrep', ['-P', String(parent.proc.pid), '-x', 'turnserver']).catch(() => ({ stdout: '' }));
  return stdout.split('\n').filter(Boolean).map(Number);
}

const isRunning = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** parley_turn_up per URL from GET /metrics. */
async function turnUp(s: RunningServer): Promise<Record<string, number>> {
  const text: string = (await http(s.baseUrl, '/metrics')).body;
  return Object.fromEntries([...text.matchAll(/^parley_turn_up\{url="([^"]+)"\} (\d+)$/gm)].map((m) => [m[1]!, Number(m[2])]));
}

const portOf = (url: string) => Number(/:(\d+)\?/.exec(url)![1]);

describe("Parley's own coturn (the default: TURN_URLS unset)", () => {
  let own: RunningServer;
  before(async () => {
    own = await startServer(); // the test helper sets TURN_PORT=0 so that parallel servers never share a port
  });
  after(async () => {
    await own?.stop();
  });

  test('ice-config names the coturn Parley runs, and its credentials allocate a relay over UDP and TCP', async () => {
    const turn = await turnEntry(own);
    assert.equal(turn.urls.length, 2);
    const port = portOf(turn.urls[0]!);
    assert.deepEqual(turn.urls, [`turn:127.0.0.1:${port}?transport=udp`, `turn:127.0.0.1:${port}?transport=tcp`]);
    assert.equal((await coturnChildren(own)).length, 1, 'one coturn, a child of the Parley process');
    for (const transport of ['udp', 'tcp'] as const) {
      const r = await allocateRelay({ port, transport }, turn.username, turn.credential);
      assert.ok(r.ok, `${transport}: ${JSON.stringify(r)}`);
      assert.equal(r.relayed.address, '127.0.0.1', 'on loopback it relays on loopback');
    }
    assert.deepEqual(await turnUp(own), { [turn.urls[0]!]: 1, [turn.urls[1]!]: 1 });
  });

  test('a killed coturn is restarted on the same port and handed out again', async () => {
    const before = await turnEntry(own);
    const [pid] = await coturnChildren(own);
    assert.ok(pid);
    process.kill(pid, 'SIGKILL');
    const [restarted] = await until('a new coturn child', () => coturnChildren(own), (pids) => pids.length === 1 && pids[0] !== pid);
    const after = await until('both URLs handed out again', () => turnEntry(own).catch(() => undefined), (t) => t?.urls.length === 2);
    assert.deepEqual(after!.urls, before.urls, 'same URLs');
    assert.ok((await allocateRelay({ port: portOf(after!.urls[0]!) }, after!.username, after!.credential)).ok, 'the new coturn serves');
    assert.ok(restarted && isRunning(restarted));
    assert.match(own.stderr(), /coturn stopped; restarting it/);
  });

  test('STUN_ENABLED=false: ice-config points STUN at the coturn, which answers Binding requests', async () => {
    const other = await startServer({ STUN_ENABLED: 'false' });
    try {
      const token = await mintToken(other.baseUrl, other.devKey);
      const ice = await http(other.baseUrl, '/v1/realtime/ice-config', { token });
      const port = portOf(ice.body.iceServers[1].urls[0]);
      assert.deepEqual(ice.body.iceServers[0], { urls: [`stun:127.0.0.1:${port}`] });
      const conn = await openStunConnection({ host: '127.0.0.1', port, transport: 'udp' });
      try {
        const answer = await conn.request(new Message(methods.BINDING, classes.REQUEST), 2000);
        assert.equal(answer.messageClass, classes.RESPONSE);
      } finally {
        conn.close();
      }
    } finally {
      await other.stop();
    }
  });

  test('coturn stops with Parley, even when Parley is killed', async () => {
    for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
      const other = await startServer();
      const pids = await coturnChildren(other);
      assert.equal(pids.length, 1);
      // A clean stop exits 0; a killed process has no exit code.
      assert.equal(await other.stop(signal), signal === 'SIGTERM' ? 0 : null);
      await until(`coturn gone after ${signal}`, () => isRunning(pids[0]!), (running) => !running);
    }
  });

  test('TURN_ENABLED=false: no TURN entry and no coturn', async () => {
    const other = await startServer({ TURN_ENABLED: 'false' });
    try {
      const token = await mintToken(other.baseUrl, other.devKey);
      const ice = await http(other.baseUrl, '/v1/realtime/ice-config', { token });
      assert.deepEqual(ice.body.iceServers.map((s: TurnEntry) => s.urls[0]!.split(':')[0]), ['stun']);
      assert.deepEqual(await coturnChildren(other), []);
    } finally {
      await other.stop();
    }
  });

  test('a TURN_PORT already taken stops the start with a clear message', async () => {
    await assert.rejects(startServer({ TURN_PORT: String(coturn.port) }), /parley: Parley's TURN server \(coturn\) cannot listen on [\d.]+:\d+: the port is in use \(by another TURN server\?\); change TURN_PORT/);
  });
});

describe('TURN servers are checked', () => {
  test('an unreachable TURN_URLS entry is left out of ice-config, with a warning and parley_turn_up 0', async () => {
    const closed = await freePort();
    const good = [`turn:127.0.0.1:${coturn.port}?transport=udp`, `turn:127.0.0.1:${coturn.port}?transport=tcp`];
    const dead = [`turn:127.0.0.1:${closed}?transport=udp`, `turn:127.0.0.1:${closed}?transport=tcp`];
    const other = await startServer({ ...turnEnv(coturn.port, [NEW_SECRET]), TURN_URLS: [...good, ...dead].join(',') });
    try {
      assert.deepEqual((await turnEntry(other)).urls, good);
      assert.deepEqual(await turnUp(other), { [good[0]!]: 1, [good[1]!]: 1, [dead[0]!]: 0, [dead[1]!]: 0 });
      for (const url of dead) assert.ok(other.stderr().includes(url) && /does not answer/.test(other.stderr()), `warning for ${url}`);
    } finally {
      await other.stop();
    }
  });

  test('a TURN server that stops is left out until it answers again (periodic checks)', async () => {
    const port = await freePort();
    const env = { ...turnEnv(port, [NEW_SECRET]), TURN_CHECK_INTERVAL_MS: '500' };
    let external = await startCoturn(await turnConfig(env));
    const other = await startServer(env);
    try {
      const hasTurn = async () => (await http(other.baseUrl, '/v1/realtime/ice-config', { token: await mintToken(other.baseUrl, other.devKey) })).body.iceServers.some((s: TurnEntry) => s.username);
      assert.equal(await hasTurn(), true);
      await external.stop();
      await until('TURN left out', hasTurn, (has) => !has);
      external = await startCoturn(await turnConfig(env));
      await until('TURN back', hasTurn, (has) => has);
    } finally {
      await other.stop();
      await external.stop();
    }
  });
});
