// The attacks of issue 44 on the SIP door, each as a figure, from raw SIP sockets on loopback
// (every 127.x address reaches it): (1) a REGISTER's Authorization replayed from another address
// with its own Contact, with `Contact: *`, and from the phone's own address; (2) an INVITE's
// replayed three times as new calls, from another address and from the caller's; (3) five wrong
// passwords for a user from one address, then the user's phone from its own; (4) a known user
// with a wrong password beside an unknown user; (5) 600 REGISTERs from one address; (6) with
// PARLEY_WORKERS=2, 300 unauthenticated INVITEs from one address and wrong passwords until the
// backoff; (7) outbound calls through a trunk (a UDP socket here that challenges with 407 and
// notes who answered) with the docs' kind of patterns. `--parley` runs another checkout's sources
// (the "before" column: `git archive <commit> | tar -x -C /tmp/before`, with node_modules linked in).
//
//   node --import tsx bench/sip-guards.ts [--parley /tmp/before/src/cli/main.ts]
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort } from '../test/helpers/baresip.ts';
import { G711_OFFER, digestAuthorization, sipRequest, sipSocket, sipStatus, type SipRequestOptions, type SipSocket } from '../test/helpers/rawSip.ts';
import { LOOPBACK_SERVER_ENV } from '../test/helpers/server.ts';

const { values } = parseArgs({ options: { parley: { type: 'string', default: resolve(import.meta.dirname, '../src/cli/main.ts') } } });

const USERS = { alice: 'alice-password', bob: 'bob-password' };

interface Parley {
  baseUrl: string;
  devKey: string;
  sipPort: number;
  stop: () => Promise<void>;
}

async function parley(env: Record<string, string>): Promise<Parley> {
  const sipPort = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-sip-guards-'));
  const proc: ChildProcess = spawn(process.execPath, ['--import', 'tsx', values.parley!, 'serve'], {
    env: { ...process.env, ...LOOPBACK_SERVER_ENV, DATA_DIR: dataDir, SIP_PORT: String(sipPort), SIP_USERS: Object.entries(USERS).map(([u, p]) => `${u}:${p}`).join(','), ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const ready = await new Promise<{ baseUrl: string; devKey: string }>((done) => {
    let out = '';
    proc.stdout!.on('data', (d) => {
      out += d;
      const m = /parley ready at (\S+)/.exec(out);
      if (m) done({ baseUrl: m[1]!, devKey: /(sk_parley_ai_\w+)/.exec(out)![1]! });
    });
  });
  return {
    ...ready,
    sipPort,
    stop: async () => {
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

const tally = (statuses: (number | undefined)[]) => JSON.stringify(Object.fromEntries([...new Set(statuses)].map((s) => [s ?? 'none', statuses.filter((t) => t === s).length])));
const stale = (answer: string | undefined) => (/stale=true/i.test(answer ?? '') ? ' stale=true' : '');
const warning = (answer: string | undefined) => /\r\nWarning: 399 parley "([^"]*)"/.exec(answer ?? '')?.[1];
/** `text` as sent from `s` (its own Via, a new branch), changed by `edit`. */
const resent = (text: string, s: SipSocket, edit: (t: string) => string = (t) => t) =>
  edit(text.replace(/\r\nVia: SIP\/2\.0\/UDP [^;\r]+;branch=[^;\r]+/, `\r\nVia: SIP/2.0/${s.via};branch=z9hG4bK${randomBytes(6).toString('hex')}`));
const register = (node: Parley, s: SipSocket, user: string, contact?: string | null) => (opts: SipRequestOptions = {}) => {
  const text = sipRequest(node.sipPort, 'REGISTER', { via: s.via, user, toUser: user, ...opts });
  return contact === undefined ? text : text.replace(/\r\nContact: [^\r]*/, contact === null ? '' : `\r\nContact: ${contact}`);
};

/** One node (the defaults, two users): attacks 1 to 5. */
async function oneNode(): Promise<void> {
  const node = await parley({});
  try {
    const socket = async (address: string) => sipSocket(node.sipPort, address);
    const contactsOf = async (user: 'alice') => {
      const s = await socket('127.0.0.9');
      const { answer } = await s.authenticated(register(node, s, user, null), user, USERS[user]);
      s.close();
      return (answer?.match(/\r\nContact: /g) ?? []).length;
    };
    // 1. alice's phone registers from 127.0.0.1; its authorized REGISTER is sent again.
    const phone = await socket('127.0.0.1');
    let granted = '';
    const make = register(node, phone, 'alice');
    await phone.authenticated((opts) => (granted = make(opts)), 'alice', USERS.alice);
    const cseq = (n: number) => (t: string) => t.replace(/CSeq: \d+ REGISTER/, `CSeq: ${n} REGISTER`);
    const attacker = await socket('127.0.0.2');
    const hijack = await attacker.exchange(resent(granted, attacker, (t) => cseq(10)(t).replace(/\r\nContact: [^\r]*/, `\r\nContact: <sip:alice@${attacker.via.split(' ')[1]}>`)));
    const afterHijack = await contactsOf('alice');
    const removal = await attacker.exchange(resent(granted, attacker, (t) => cseq(11)(t).replace(/\r\nContact: [^\r]*/, '\r\nContact: *\r\nExpires: 0')));
    const afterRemoval = await contactsOf('alice');
    const neighbour = await socket('127.0.0.1');
    const again = await neighbour.exchange(resent(granted, neighbour, (t) => cseq(12)(t).replace(/\r\nContact: [^\r]*/, `\r\nContact: <sip:alice@${neighbour.via.split(' ')[1]}>`)));
    console.log(`register replay: from 127.0.0.2 with its Contact → ${sipStatus(hijack)}${stale(hijack)} (alice's contacts then: ${afterHijack}); with Contact: * → ${sipStatus(removal)}${stale(removal)} (contacts then: ${afterRemoval}); from alice's address, used → ${sipStatus(again)}${stale(again)}`);

    // 2. An INVITE authorized once, sent again three times as new calls (new Call-ID and From tag).
    let invite = '';
    const makeInvite = (opts: SipRequestOptions) => (invite = sipRequest(node.sipPort, 'INVITE', { via: phone.via, body: G711_OFFER, ...opts }));
    const first = await phone.authenticated(makeInvite, 'alice', USERS.alice);
    const newCall = (t: string) => t.replace(/\r\nCall-ID: [^\r]*/, `\r\nCall-ID: ${randomBytes(8).toString('hex')}`).replace(/(\r\nFrom: [^\r]*;tag=)[^;\r]+/, `$1${randomBytes(4).toString('hex')}`);
    const replays: string[] = [];
    for (const s of [attacker, neighbour]) {
      const answers: (string | undefined)[] = [];
      for (let i = 0; i < 3; i++) answers.push(await s.exchange(resent(invite, s, newCall)));
      replays.push(`from ${s.via.split(' ')[1]!.split(':')[0]} → ${answers.map((a) => `${sipStatus(a)}${stale(a)}`).join(', ')}`);
    }
    console.log(`invite replay: the call itself → ${sipStatus(first.answer)}; three times as new calls ${replays.join('; ')}`);

    // 3. Five wrong passwords for bob from 127.0.0.4; then the right one from there, and from bob's phone at 127.0.0.8.
    const guesser = await socket('127.0.0.4');
    const guesses: (number | undefined)[] = [];
    for (let i = 0; i < 5; i++) guesses.push(sipStatus((await guesser.authenticated(register(node, guesser, 'bob'), 'bob', `guess-${i}`)).answer));
    const held = (await guesser.authenticated(register(node, guesser, 'bob'), 'bob', USERS.bob)).answer;
    const bobsPhone = await socket('127.0.0.8');
    const bob = (await bobsPhone.authenticated(register(node, bobsPhone, 'bob'), 'bob', USERS.bob)).answer;
    console.log(`lockout: 5 wrong passwords for bob from 127.0.0.4 → ${tally(guesses)}; the right one from 127.0.0.4 → ${sipStatus(held)} (${warning(held)}); bob's phone from 127.0.0.8 → ${sipStatus(bob)}${warning(bob) ? ` (${warning(bob)})` : ''}`);

    // 4. A known user with a wrong password, an unknown user.
    const prober = await socket('127.0.0.3');
    const known = (await prober.authenticated(register(node, prober, 'alice'), 'alice', 'not-hers')).answer;
    const unknown = (await prober.authenticated(register(node, prober, 'mallory'), 'mallory', 'anything')).answer;
    console.log(`enumeration: alice with a wrong password → ${sipStatus(known)}; mallory (no such user) → ${sipStatus(unknown)}`);

    // 5. 600 REGISTERs from one address.
    const flooder = await socket('127.0.0.5');
    const started = performance.now();
    const statuses: (number | undefined)[] = [];
    for (let i = 0; i < 600; i++) statuses.push(sipStatus(await flooder.exchange(register(node, flooder, 'mallory')(), 5000)));
    console.log(`register flood: 600 from 127.0.0.5 in ${((performance.now() - started) / 1000).toFixed(1)} s → ${tally(statuses)}`);
    for (const s of [phone, attacker, neighbour, guesser, bobsPhone, prober, flooder]) s.close();
  } finally {
    await node.stop();
  }
}

/** PARLEY_WORKERS=2 without Redis: attack 6. */
async function twoWorkers(): Promise<void> {
  const node = await parley({ PARLEY_WORKERS: '2' });
  try {
    const stranger = await sipSocket(node.sipPort, '127.0.0.3');
    const statuses: (number | undefined)[] = [];
    for (let i = 0; i < 300; i++) statuses.push(sipStatus(await stranger.exchange(sipRequest(node.sipPort, 'INVITE', { via: stranger.via, body: G711_OFFER }), 5000)));
    console.log(`workers: 300 unauthenticated INVITEs from 127.0.0.3 (random Call-IDs, both workers) → ${tally(statuses)}`);
    const guesser = await sipSocket(node.sipPort, '127.0.0.4');
    let wrong = 0;
    for (; wrong < 30; wrong++) {
      const callId = randomBytes(8).toString('hex');
      const request = register(node, guesser, 'alice');
      const challenge = await guesser.exchange(request({ callId }));
      const answer = await guesser.exchange(request({ callId, cseq: 2, headers: [digestAuthorization(node.sipPort, challenge!, 'alice', `guess-${wrong}`, 'REGISTER')] }));
      if (!/wrong password"/.test(answer ?? '')) break;
    }
    console.log(`workers: wrong passwords for alice from 127.0.0.4 answered "wrong password" before the backoff: ${wrong}`);
    stranger.close();
    guesser.close();
  } finally {
    await node.stop();
  }
}

/** Outbound calls through a trunk that challenges (407): attack 7. */
async function tollFraud(): Promise<void> {
  const trunk = createSocket('udp4');
  await new Promise<void>((r) => trunk.bind(0, '127.0.0.1', () => r()));
  const trunkPort = trunk.address().port;
  const elsewhere = await freePort();
  const heard: { uri: string; credentials: boolean }[] = [];
  trunk.on('message', (m, from) => {
    const text = m.toString('latin1');
    if (!text.startsWith('INVITE ')) return;
    const credentials = /\r\nProxy-Authorization: /i.test(text);
    heard.push({ uri: text.split(' ')[1]!, credentials });
    const echoed = text.split('\r\n\r\n')[0]!.split('\r\n').filter((l) => /^(Via|From|To|Call-ID|CSeq):/i.test(l));
    const status = credentials ? '486 Busy Here' : '407 Proxy Authentication Required\r\nProxy-Authenticate: Digest realm="trunk", nonce="n0nce", algorithm=MD5';
    trunk.send([`SIP/2.0 ${status}`, ...echoed, 'Content-Length: 0', '', ''].join('\r\n'), from.port, from.address);
  });
  const node = await parley({
    SIP_OUTBOUND_TRUNK: `sip:trunk-user:trunk-password@127.0.0.1:${trunkPort}`,
    // The docs' kinds of pattern: numbers, a registered user, `*`, the PBX's users (the trunk's host), another host.
    SIP_OUTBOUND_ALLOW: `*=+4930*,alice,*,sip:*@127.0.0.1:${trunkPort},sip:*@127.0.0.1:${elsewhere}`,
  });
  try {
    const lines: string[] = [];
    for (const to of ['+19005551234', 'tel:+19005551234', `sip:+19005551234@127.0.0.1:${trunkPort}`, `sip:+4930123456@127.0.0.1:${elsewhere}`, '+4930123456']) {
      const before = heard.length;
      const res = await fetch(`${node.baseUrl}/v1/realtime/sip/calls`, { method: 'POST', headers: { authorization: `Bearer ${node.devKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ to }) });
      let sent = 'not sent';
      if (res.status === 201) {
        // The INVITE, its challenge, and the answer to it if one comes (within 3 s: at once, on loopback).
        const started = performance.now();
        while (!heard.slice(before).some((h) => h.credentials) && performance.now() - started < 3000) await new Promise((r) => setTimeout(r, 50));
        const invites = heard.slice(before);
        sent = invites.some((h) => h.credentials) ? "its challenge answered with the trunk's credentials" : invites.length ? 'challenged, not answered' : 'nothing at the trunk';
      }
      lines.push(`${to} → ${res.status} (${sent})`);
    }
    console.log(`toll fraud: ${lines.join('; ')}`);
  } finally {
    await node.stop();
    trunk.close();
  }
}

await oneNode();
await twoWorkers();
await tollFraud();
