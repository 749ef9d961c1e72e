// The SIP door against its own callers (issue 44): digest answers replayed — a REGISTER's from
// another address with its own Contact and with `Contact: *`, the same from the phone's own
// address once used, an INVITE's three times as new calls — each taken from a real user agent's
// traffic (baresip's SIP trace); a phone locked out by someone guessing its password from elsewhere;
// user names told apart by their answers; a REGISTER flood from one address. baresip and linphonec
// registering for 60 s meanwhile refresh their registrations (a used nonce answered `stale=true`).
// Raw SIP on loopback: every 127.x address reaches it, so each attacker has an address of its own.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { encodeWav } from '../src/media/audio/wav.ts';
import { freePort, startBaresip, type Baresip } from './helpers/baresip.ts';
import { startLinphone, type Linphone } from './helpers/linphone.ts';
import { G729_ONLY_OFFER, sipRequest, sipSocket, sipStatus, type SipRequestOptions, type SipSocket } from './helpers/rawSip.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

const PASSWORDS: Record<string, string> = { alice: 'alice-password', bob: 'bob-password', carol: 'carol-password', dave: 'dave-password' };
/** RATE_LIMIT_SIP_REGISTERS_PER_IP's default. */
const REGISTERS_PER_ADDRESS = 120;

let server: RunningServer;
let sipPort: number;
let dir: string;
let quiet: string;
const closers: (() => unknown)[] = [];
/** Phones registering for 60 s from the start: their refreshes are checked by the last test. */
let refreshing: { baresip: Baresip; linphone: Linphone };

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'parley-sip-guards-'));
  sipPort = await freePort();
  server = await startServer({
    SIP_PORT: String(sipPort),
    SIP_USERS: Object.entries(PASSWORDS).map(([u, p]) => `${u}:${p}`).join(','),
    // A window no busy machine outlasts: the counts below are of one window.
    RATE_LIMIT_WINDOW_SECONDS: '3600',
  });
  quiet = join(dir, 'quiet.wav');
  writeFileSync(quiet, encodeWav([new Int16Array(8000 * 60)], 8000));
  const [baresip, linphone] = await Promise.all([
    startBaresip(join(dir, 'refresh-carol'), { user: 'carol', password: PASSWORDS.carol!, wav: quiet, registrar: sipPort, regint: 60 }),
    startLinphone(join(dir, 'refresh-dave'), { regExpires: 60 }),
  ]);
  closers.push(() => baresip.stop(), () => linphone.stop());
  linphone.command(`register sip:dave@127.0.0.1 sip:127.0.0.1:${sipPort} ${PASSWORDS.dave}`);
  refreshing = { baresip, linphone };
});

after(async () => {
  for (const close of closers.reverse()) await close();
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function socket(address: string): Promise<SipSocket> {
  const s = await sipSocket(sipPort, address);
  closers.push(() => s.close());
  return s;
}

/** A REGISTER of `user` from `s` (`contact: null`: a query, no Contact). */
const register = (s: SipSocket, user: string, extra: { contact?: string | null; headers?: string[] } = {}) => (opts: SipRequestOptions = {}) => {
  const text = sipRequest(sipPort, 'REGISTER', { via: s.via, user, toUser: user, ...opts, headers: [...(extra.headers ?? []), ...(opts.headers ?? [])] });
  return extra.contact === undefined ? text : text.replace(/\r\nContact: [^\r]*/, extra.contact === null ? '' : `\r\nContact: ${extra.contact}`);
};

/** `user`'s registered contacts, as a query REGISTER with the right password lists them. */
async function contactsOf(user: string): Promise<string[]> {
  const s = await socket('127.0.0.9');
  const { answer } = await s.authenticated(register(s, user, { contact: null }), user, PASSWORDS[user]!);
  assert.equal(sipStatus(answer), 200, answer);
  return [...answer!.matchAll(/\r\nContact: <([^>]+)>/g)].map((m) => m[1]!);
}

/** The first `method` request in a user agent's SIP trace that matches `has`, whole (head and body). */
function traced(out: string, method: string, has: RegExp): string {
  for (const m of out.matchAll(new RegExp(`${method} sip:[^\\r\\n]* SIP/2\\.0\\r\\n`, 'g'))) {
    const headEnd = out.indexOf('\r\n\r\n', m.index);
    const head = out.slice(m.index, headEnd + 4);
    const text = head + out.slice(headEnd + 4, headEnd + 4 + Number(/\r\nContent-Length: *(\d+)/i.exec(head)?.[1] ?? 0));
    if (has.test(text)) return text;
  }
  throw new Error(`no ${method} matching ${has} in the trace`);
}

/** `text` as an attacker at `s` sends it: its own Via (a new branch), and the changes `edit` makes. */
const replayed = (text: string, s: SipSocket, edit: (t: string) => string = (t) => t) =>
  edit(text.replace(/\r\nVia: SIP\/2\.0\/UDP [^;\r]+;branch=[^;\r]+/i, `\r\nVia: SIP/2.0/${s.via};branch=z9hG4bK${randomBytes(6).toString('hex')}`));

describe('replayed digest answers (44.4)', () => {
  test("alice's REGISTER replayed from another address with its own Contact, and with Contact: *, changes nothing; from alice's own address once used, it is stale", async () => {
    const phone = await startBaresip(join(dir, 'victim-alice'), { user: 'alice', password: PASSWORDS.alice!, wav: quiet, registrar: sipPort });
    closers.push(() => phone.stop());
    await until('alice registered', phone.out, (o) => /SIP\/2\.0 200 OK\r\n(?:[^\r]*\r\n)*?CSeq: \d+ REGISTER/.test(o), 30_000);
    const granted = traced(phone.out(), 'REGISTER', /\r\nAuthorization: Digest /);
    const [phoneContact] = await contactsOf('alice');
    assert.ok(phoneContact, 'the phone is registered');

    // An eavesdropper elsewhere sends it again with its own Contact (CSeq raised, as a later REGISTER's),
    // then with Contact: * to remove alice's registrations; a neighbour behind the phone's NAT (the
    // same address, another port) sends the used answer again with its own Contact.
    const attacker = await socket('127.0.0.2');
    const neighbour = await socket('127.0.0.1');
    const cseq = Number(/\r\nCSeq: (\d+) REGISTER/.exec(granted)![1]);
    const withCSeq = (n: number) => (t: string) => t.replace(/\r\nCSeq: \d+ REGISTER/, `\r\nCSeq: ${n} REGISTER`);
    const ownContact = (s: SipSocket) => (t: string) => t.replace(/\r\nContact: [^\r]*/, `\r\nContact: <sip:alice@${s.via.split(' ')[1]}>`);
    const hijack = await attacker.exchange(replayed(granted, attacker, (t) => ownContact(attacker)(withCSeq(cseq + 10)(t))));
    const removal = await attacker.exchange(replayed(granted, attacker, (t) => withCSeq(cseq + 11)(t).replace(/\r\nContact: [^\r]*/, '\r\nContact: *\r\nExpires: 0')));
    const again = await neighbour.exchange(replayed(granted, neighbour, (t) => ownContact(neighbour)(withCSeq(cseq + 12)(t))));
    const stale = (a: string | undefined) => /\r\nWWW-Authenticate: Digest [^\r]*stale=true/i.test(a ?? '');
    assert.deepEqual(
      { hijack: [sipStatus(hijack), stale(hijack)], removal: [sipStatus(removal), stale(removal)], again: [sipStatus(again), stale(again)] },
      // From elsewhere: challenged, not even told the password was right; from the phone's address: stale (a fresh nonce needed).
      { hijack: [401, false], removal: [401, false], again: [401, true] },
    );
    assert.deepEqual(await contactsOf('alice'), [phoneContact], "alice's one registration, untouched");
  });

  test("an INVITE's answer replayed three times as new calls: no call", async () => {
    const caller = await startBaresip(join(dir, 'victim-invite'), { user: 'alice', password: PASSWORDS.alice!, wav: quiet });
    closers.push(() => caller.stop());
    await caller.command('dial', `sip:agent@127.0.0.1:${sipPort}`);
    await until('the call answered', caller.out, (o) => /X-Parley-Call-Id: conv_/.test(o), 60_000);
    const invite = traced(caller.out(), 'INVITE', /\r\nAuthorization: Digest /);
    await caller.command('hangup');

    const newCall = (t: string) =>
      t.replace(/\r\nCall-ID: [^\r]*/i, `\r\nCall-ID: ${randomBytes(8).toString('hex')}`).replace(/(\r\nFrom: [^\r]*;tag=)[^;\r]+/i, `$1${randomBytes(4).toString('hex')}`);
    for (const address of ['127.0.0.2', '127.0.0.1']) {
      const attacker = await socket(address);
      const answers = [];
      for (let i = 0; i < 3; i++) answers.push(await attacker.exchange(replayed(invite, attacker, newCall)));
      assert.deepEqual(answers.map(sipStatus), [401, 401, 401], `replayed from ${address}: ${answers.find((a) => sipStatus(a) !== 401)}`);
      // From the caller's own address it is told its answer is stale (its password was right); from elsewhere, nothing.
      for (const a of answers) (address === '127.0.0.1' ? assert.match : assert.doesNotMatch)(a!, /stale=true/i);
    }
  });
});

describe('lockout and enumeration (44.7, 44.8)', () => {
  test("five wrong passwords for bob from one address back that address off; bob's phone elsewhere still registers", async () => {
    const guesser = await socket('127.0.0.4');
    for (let i = 0; i < 5; i++) {
      const { answer } = await guesser.authenticated(register(guesser, 'bob'), 'bob', `guess-${i}`);
      assert.equal(sipStatus(answer), 403, `guess ${i + 1}`);
      assert.match(answer!, /\r\nWarning: 399 parley "wrong password"/);
    }
    // bob's real phone registers from its own address.
    const phone = await startBaresip(join(dir, 'locked-bob'), { user: 'bob', password: PASSWORDS.bob!, wav: quiet, registrar: sipPort });
    closers.push(() => phone.stop());
    const out = await until('bob registered or refused', phone.out, (o) => /SIP\/2\.0 (200 OK|403 Forbidden)\r\n(?:[^\r]*\r\n)*?CSeq: \d+ REGISTER/.test(o), 30_000);
    assert.doesNotMatch(out, /SIP\/2\.0 403 Forbidden/, 'the phone was not refused');
    assert.match(out, /SIP\/2\.0 200 OK\r\n(?:[^\r]*\r\n)*?CSeq: \d+ REGISTER/, 'the phone registered');
    // The guesser's address is refused now, even with the right password.
    const { answer: held } = await guesser.authenticated(register(guesser, 'bob'), 'bob', PASSWORDS.bob!);
    assert.equal(sipStatus(held), 403);
    assert.match(held!, /\r\nWarning: 399 parley "too many wrong passwords from this address/);
    const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
    assert.match(metrics, /^parley_rate_limited_total\{limit="sip-auth-ip"\} 1$/m);
  });

  test('a known user with a wrong password and an unknown user are answered alike (REGISTER and INVITE)', async () => {
    const prober = await socket('127.0.0.3');
    const invite = (opts: SipRequestOptions) => sipRequest(sipPort, 'INVITE', { via: prober.via, body: G729_ONLY_OFFER, ...opts });
    const requests: [string, (user: string) => (opts: SipRequestOptions) => string][] = [
      ['REGISTER', (user) => register(prober, user)],
      ['INVITE', () => invite],
    ];
    for (const [method, make] of requests) {
      const known = (await prober.authenticated(make('alice'), 'alice', 'not-her-password')).answer!;
      const unknown = (await prober.authenticated(make('mallory'), 'mallory', 'any-password')).answer!;
      const shape = (a: string) => [sipStatus(a), /\r\nWarning: ([^\r]*)/.exec(a)?.[1], /\r\nWWW-Authenticate: /.test(a)];
      assert.deepEqual(shape(unknown), shape(known), `${method}: known ${known.split('\r\n')[0]}, unknown ${unknown.split('\r\n')[0]}`);
      assert.equal(sipStatus(known), 403);
    }
  });
});

describe('a REGISTER flood (44.9)', () => {
  test(`one address gets ${REGISTERS_PER_ADDRESS} REGISTERs answered, then 503 with Retry-After; another address is answered`, async () => {
    const flooder = await socket('127.0.0.5');
    const statuses: (number | undefined)[] = [];
    let refusal: string | undefined;
    for (let i = 0; i < REGISTERS_PER_ADDRESS + 10; i++) {
      const answer = await flooder.exchange(register(flooder, 'mallory')());
      statuses.push(sipStatus(answer));
      if (sipStatus(answer) === 503) refusal ??= answer;
    }
    assert.equal(statuses.filter((s) => s === 401).length, REGISTERS_PER_ADDRESS, `statuses: ${statuses}`);
    assert.equal(statuses.filter((s) => s === 503).length, 10, `statuses: ${statuses}`);
    assert.ok(Number(/\r\nRetry-After: (\d+)\r\n/.exec(refusal!)?.[1]) >= 1);
    const other = await socket('127.0.0.6');
    assert.equal(sipStatus(await other.exchange(register(other, 'mallory')())), 401);
    assert.match(await (await fetch(`${server.baseUrl}/metrics`)).text(), /^parley_rate_limited_total\{limit="sip-register-ip"\} 10$/m);
  });
});

describe('real phones under one-time nonces', () => {
  test('baresip and linphonec registered for 60 s refresh their registrations (a reused nonce is answered stale=true and answered again)', async () => {
    const { baresip, linphone } = refreshing;
    const refreshed = (o: string) => (o.match(/SIP\/2\.0 200 OK\r?\n(?:[^\r\n][^\n]*\n)*?CSeq: \d+ REGISTER/g) ?? []).length >= 2;
    await Promise.all([until('baresip refreshed', baresip.out, refreshed, 120_000), until('linphonec refreshed', linphone.out, refreshed, 120_000)]);
    for (const out of [baresip.out(), linphone.out()]) assert.doesNotMatch(out, /SIP\/2\.0 403 /);
    // linphonec refreshes with its last nonce (nc=00000002): told it is stale, it answers the new one.
    assert.match(linphone.out(), /\r?\nWWW-Authenticate: Digest [^\r\n]*stale=true/);
    assert.match(linphone.out(), /to \[LinphoneRegistrationOk\]/);
    assert.doesNotMatch(linphone.out(), /to \[LinphoneRegistrationFailed\]/);
    // A call from baresip still goes through its challenge.
    await refreshing.baresip.command('dial', `sip:agent@127.0.0.1:${sipPort}`);
    await until('the call answered', baresip.out, (o) => /X-Parley-Call-Id: conv_/.test(o), 60_000);
    await refreshing.baresip.command('hangup');
  });
});
