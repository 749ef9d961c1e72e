// Our own SIP code: the message parser and stream framing (including a fuzz run that must never
// throw), the SDP offer reading and answer, digest authentication, RFC 4733 key presses.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { AuthBackoff } from '../../src/sip/authBackoff.ts';
import { callerAdmission } from '../../src/sip/callerAdmission.ts';
import { DigestAuth } from '../../src/sip/digest.ts';
import { blockList } from '../../src/system/cidr.ts';
import { frame, param, parseMessage, uriOf, userOf } from '../../src/sip/message.ts';
import { readOffer, writeAnswer } from '../../src/calls/sip/sdp.ts';
import { SrtpChannel } from '../../src/media/srtp.ts';
import { TelephoneEvents } from '../../src/media/telephoneEvent.ts';

const SDP = ['v=0', 'o=- 1 1 IN IP4 192.0.2.9', 's=-', 'c=IN IP4 192.0.2.9', 't=0 0', 'm=audio 40000 RTP/AVP 8 0 101', 'a=rtpmap:101 telephone-event/8000', 'a=sendrecv', ''].join('\r\n');

const INVITE = [
  'INVITE sip:agent@example.com SIP/2.0',
  'v: SIP/2.0/UDP 192.0.2.9:5060;branch=z9hG4bKabc;rport, SIP/2.0/UDP 10.0.0.1;branch=z9hG4bKdef',
  'f: "Bob, the caller" <sip:bob@example.com>;tag=1928',
  't: <sip:agent@example.com>',
  'i: a84b4c76e66710',
  'CSeq: 314159 INVITE',
  'Subject: folded',
  '  across lines',
  'm: <sip:bob@192.0.2.9>',
  'c: application/sdp',
  `l: ${Buffer.byteLength(SDP)}`,
  '',
  SDP,
].join('\r\n');

test('an INVITE with compact headers, a Via list and a folded line', () => {
  const parsed = parseMessage(Buffer.from(INVITE));
  assert.ok(parsed.ok);
  const m = parsed.message;
  assert.equal(m.kind, 'request');
  assert.equal(m.kind === 'request' && m.method, 'INVITE');
  assert.equal(m.branch, 'z9hG4bKabc');
  assert.deepEqual(m.cseq, { seq: 314159, method: 'INVITE' });
  assert.equal(m.headers.all('via').length, 2);
  assert.equal(m.headers.get('subject'), 'folded across lines');
  assert.equal(param(m.from, 'tag'), '1928');
  assert.equal(uriOf(m.from), 'sip:bob@example.com');
  assert.equal(userOf(m.from), 'bob');
  assert.equal(m.body.toString(), SDP);
});

test('malformed messages read as errors; those with a Via and a CSeq can be answered (400, 505 for another version)', () => {
  const mismatch = parseMessage(Buffer.from(INVITE.replace('CSeq: 314159 INVITE', 'CSeq: 314159 BYE')));
  assert.ok(!mismatch.ok && mismatch.partial?.method === 'INVITE' && mismatch.status === 400);
  const answerable = [INVITE.replace('i: a84b4c76e66710\r\n', ''), INVITE.replace(/l: \d+/, 'l: 99999'), INVITE.replace(/l: \d+/, 'l: -1'), INVITE.replace('CSeq: 314159', 'CSeq: x'), INVITE.replace('CSeq: 314159', 'CSeq: 99999999999')];
  for (const bad of answerable) {
    const parsed = parseMessage(Buffer.from(bad));
    assert.ok(!parsed.ok && parsed.partial?.method === 'INVITE' && parsed.status === 400, bad.slice(0, 60));
  }
  const version = parseMessage(Buffer.from(INVITE.replace('SIP/2.0\r\n', 'SIP/3.0\r\n')));
  assert.ok(!version.ok && version.status === 505);
  for (const bad of [INVITE.replace(/v: [^\r]*\r\n/, ''), INVITE.replace('CSeq: 314159 INVITE\r\n', ''), 'INVITE\r\n\r\n', INVITE.replace('\r\n\r\n', '\r\n')]) {
    const parsed = parseMessage(Buffer.from(bad));
    assert.ok(!parsed.ok && !parsed.partial, bad.slice(0, 60));
  }
});

test('a fuzz run of mutated messages never throws', () => {
  const base = Buffer.from(INVITE);
  let seed = 42;
  const random = (n: number) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
  let readable = 0;
  for (let i = 0; i < 20_000; i++) {
    const m = Buffer.from(base);
    for (let k = 0; k < 1 + random(6); k++) m[random(m.length)] = [0, 0x0d, 0x0a, 0x3a, 0x3b, 0x3c, 0x3e, 0x22, 0x2c, random(256)][random(10)]!;
    const cut = i % 3 === 0 ? m.subarray(0, random(m.length)) : m;
    const parsed = parseMessage(cut);
    if (parsed.ok) readable++;
    frame(cut);
    if (parsed.ok) readOffer(parsed.message.body.toString('latin1'));
  }
  for (let i = 0; i < 2000; i++) {
    const junk = randomBytes(random(400));
    parseMessage(junk);
    frame(junk);
    readOffer('v=0\r\n' + junk.toString('latin1'));
  }
  assert.ok(readable > 0 && readable < 20_000, `some mutations stay readable: ${readable}`);
});

test('a stream is framed by Content-Length; CRLF keep-alives between messages', () => {
  const bytes = Buffer.from('\r\n\r\n' + INVITE + INVITE);
  let rest: Buffer = bytes;
  const kinds: string[] = [];
  for (;;) {
    const next = frame(rest);
    kinds.push(next.kind);
    if (next.kind === 'keepalive' || next.kind === 'message') rest = next.rest;
    else break;
  }
  assert.deepEqual(kinds, ['keepalive', 'message', 'message', 'incomplete']);
  assert.equal(frame(Buffer.from(INVITE.slice(0, INVITE.length - 5))).kind, 'incomplete');
  assert.equal(frame(Buffer.from('OPTIONS sip:x SIP/2.0\r\nVia: x\r\n\r\n')).kind, 'invalid');
});

test("the offer's preferred G.711, its DTMF and direction; the answer mirrors the direction", () => {
  const read = readOffer(SDP);
  assert.ok(read.ok);
  assert.deepEqual({ ...read.offer }, { protocol: 'RTP/AVP', address: '192.0.2.9', port: 40000, rtcpPort: 40001, codec: 'pcma', payloadType: 8, dtmfPayloadType: 101, dtmfClockRate: 8000, direction: 'sendrecv', ptime: undefined });
  const hold = readOffer(SDP.replace('a=sendrecv', 'a=sendonly'));
  assert.ok(hold.ok);
  const answer = writeAnswer({ sessionId: 1, version: 2, address: '127.0.0.1', rtpPort: 30000, rtcpPort: 30001, offer: hold.offer });
  assert.match(answer, /m=audio 30000 RTP\/AVP 8 101\r\n/);
  assert.match(answer, /a=recvonly/);
  assert.match(answer, /a=rtcp:30001/);
  const g729 = readOffer(SDP.replace('RTP/AVP 8 0 101', 'RTP/AVP 18'));
  assert.ok(!g729.ok && /PCMU, PCMA or Opus/.test(g729.reason));
  assert.ok(!readOffer('hello').ok);
});

test('Opus when the caller prefers it, with the 48 kHz telephone-event; G.711 when that comes first', () => {
  const opusFirst = SDP.replace('RTP/AVP 8 0 101', 'RTP/AVP 111 0 101 102').replace(
    'a=rtpmap:101 telephone-event/8000',
    'a=rtpmap:111 opus/48000/2\r\na=fmtp:111 useinbandfec=1\r\na=rtpmap:101 telephone-event/8000\r\na=rtpmap:102 telephone-event/48000',
  );
  const read = readOffer(opusFirst);
  assert.ok(read.ok);
  assert.deepEqual([read.offer.codec, read.offer.payloadType, read.offer.dtmfPayloadType], ['opus', 111, 102]);
  const answer = writeAnswer({ sessionId: 1, version: 1, address: '127.0.0.1', rtpPort: 30000, rtcpPort: 30001, offer: read.offer });
  assert.match(answer, /m=audio 30000 RTP\/AVP 111 102\r\n/);
  assert.match(answer, /a=rtpmap:111 opus\/48000\/2\r\n/);
  assert.match(answer, /a=rtpmap:102 telephone-event\/48000\r\n/);
  const g711First = readOffer(opusFirst.replace('RTP/AVP 111 0 101 102', 'RTP/AVP 0 111 101 102'));
  assert.ok(g711First.ok);
  assert.deepEqual([g711First.offer.codec, g711First.offer.payloadType, g711First.offer.dtmfPayloadType], ['pcmu', 0, 101]);
  // Opus with key presses at 8 kHz only (as baresip and many phones offer): taken at 8 kHz.
  const eightKhzKeys = readOffer(opusFirst.replace('RTP/AVP 111 0 101 102', 'RTP/AVP 111 101'));
  assert.ok(eightKhzKeys.ok);
  assert.deepEqual([eightKhzKeys.offer.codec, eightKhzKeys.offer.dtmfPayloadType], ['opus', 101]);
  assert.match(writeAnswer({ sessionId: 1, version: 1, address: '127.0.0.1', rtpPort: 30000, rtcpPort: 30001, offer: eightKhzKeys.offer }), /a=rtpmap:101 telephone-event\/8000\r\n/);
  // A dynamic payload type means only what its rtpmap says.
  const unnamed = readOffer(SDP.replace('RTP/AVP 8 0 101', 'RTP/AVP 111'));
  assert.ok(!unnamed.ok);
});

test('digest: a nonce admits one request, from its address and for that request; used, old or another request\'s it is stale; from elsewhere it proves nothing', () => {
  const key = randomBytes(32).toString('hex');
  const users = new Map([['alice', 's3cret']]);
  const auth = new DigestAuth(users, key);
  const md5 = (s: string) => createHash('md5').update(s).digest('hex');
  const req = { method: 'INVITE', source: '198.51.100.7', callId: 'call-1@phone', uri: 'sip:agent@h' };
  const answer = (password: string, challenge: string, opts: { realm?: string; user?: string } = {}) => {
    const { realm = 'parley', user = 'alice' } = opts;
    const nonce = /nonce="([^"]+)"/.exec(challenge)![1]!;
    const response = md5(`${md5(`${user}:${realm}:${password}`)}:${nonce}:00000001:xyz:auth:${md5('INVITE:sip:agent@h')}`);
    return `Digest username="${user}", realm="${realm}", nonce="${nonce}", uri="sip:agent@h", response="${response}", qop=auth, nc=00000001, cnonce="xyz", algorithm=MD5`;
  };
  const now = 1_700_000_000_000;
  const challenge = auth.challenge(req, false, now);
  assert.doesNotMatch(challenge, /stale/);
  assert.match(auth.challenge(req, true, now), /, stale=true$/);
  // Wrong answers use nothing up; an unknown name is a wrong password, not a new challenge.
  assert.deepEqual(auth.check(answer('wrong', challenge), req, now), { user: 'alice', passwordRight: false, stale: false });
  assert.deepEqual(auth.check(answer('s3cret', challenge, { user: 'mallory' }), req, now), { user: 'mallory', passwordRight: false, stale: false });
  assert.deepEqual(auth.check(answer('s3cret', challenge), { ...req, method: 'BYE' }, now), { user: 'alice', passwordRight: false, stale: false }, 'another method');
  // The same address, another request (the next call, a refresh with its last nonce): stale.
  assert.deepEqual(auth.check(answer('s3cret', challenge), { ...req, callId: 'call-2@phone' }, now), { user: 'alice', passwordRight: true, stale: true });
  assert.deepEqual(auth.check(answer('s3cret', challenge), { ...req, uri: 'sip:+19005551234@h' }, now), { user: 'alice', passwordRight: true, stale: true });
  assert.deepEqual(auth.check(answer('s3cret', challenge), req, now + 31_000), { user: 'alice', passwordRight: true, stale: true }, 'after 30 s');
  // Another address: nothing, whatever the password.
  assert.equal(auth.check(answer('s3cret', challenge), { ...req, source: '203.0.113.9' }, now), undefined);
  // The right answer admits once.
  assert.deepEqual(auth.check(answer('s3cret', challenge), req, now + 1000), { user: 'alice', passwordRight: true, stale: false });
  assert.deepEqual(auth.check(answer('s3cret', challenge), req, now + 2000), { user: 'alice', passwordRight: true, stale: true }, 'used');
  // Another worker with the same key knows the nonce for this address's, but it admits only where it was issued.
  const sibling = new DigestAuth(users, key);
  const fresh = auth.challenge(req, false, now);
  assert.deepEqual(sibling.check(answer('s3cret', fresh), req, now), { user: 'alice', passwordRight: true, stale: true });
  assert.equal(new DigestAuth(users).check(answer('s3cret', fresh), req, now), undefined, 'another key: not ours');
  // Answers that prove nothing.
  assert.equal(auth.check(answer('s3cret', fresh, { realm: 'other' }), req, now), undefined);
  assert.equal(auth.check(answer('s3cret', fresh.replace(/nonce="(\w+)\./, 'nonce="$1x.')), req, now), undefined, 'a forged nonce');
  assert.equal(auth.check(undefined, req, now), undefined);
});

test('a key press is told once, whatever its repeats and end packets', () => {
  const keys = new TelephoneEvents();
  const packet = (event: number, end: boolean) => Buffer.from([event, end ? 0x80 : 0, 0, 160]);
  assert.equal(keys.read(packet(5, false), 1000), '5');
  assert.equal(keys.read(packet(5, false), 1000), undefined);
  assert.equal(keys.read(packet(5, true), 1000), undefined);
  assert.equal(keys.read(packet(11, false), 2000), '#');
  assert.equal(keys.read(packet(99, false), 3000), undefined);
  assert.equal(keys.read(Buffer.from([1]), 4000), undefined);
});

test('callers: trusted ranges as they are, others by digest or refused; loopback only when nothing is configured', async () => {
  const noUsers = new DigestAuth(new Map());
  const users = new DigestAuth(new Map([['alice', 's3cret']]));
  const trunk = blockList(['203.0.113.0/24']);
  const parsed = parseMessage(Buffer.from(INVITE));
  assert.ok(parsed.ok && parsed.message.kind === 'request');
  const invite = parsed.message;
  const verdict = (trusted: typeof trunk | undefined, auth: DigestAuth, address: string) => callerAdmission({ trusted, auth, authAttempts: new AuthBackoff(5) }, invite, address);
  assert.equal(await verdict(undefined, noUsers, '127.0.0.1'), 'admitted');
  assert.equal(await verdict(undefined, noUsers, '::1'), 'admitted');
  assert.equal(await verdict(undefined, noUsers, '198.51.100.7'), 'forbidden');
  assert.equal(await verdict(trunk, noUsers, '203.0.113.9'), 'admitted');
  assert.equal(await verdict(trunk, noUsers, '198.51.100.7'), 'forbidden');
  assert.equal(await verdict(trunk, noUsers, '127.0.0.1'), 'forbidden', 'ranges configured: loopback is not special');
  assert.equal(await verdict(trunk, users, '198.51.100.7'), 'challenge');
  assert.equal(await verdict(trunk, users, '203.0.113.9'), 'admitted');
  assert.equal(await verdict(undefined, users, '127.0.0.1'), 'challenge');
});

test('RTP/SAVP: the caller\'s SDES key read, our own answered under its tag; without a key we take, refused', () => {
  const key = Buffer.alloc(30, 7).toString('base64');
  const savp = SDP.replace('RTP/AVP 8 0 101', 'RTP/SAVP 0 101').replace(
    'a=sendrecv',
    `a=crypto:1 AES_CM_128_HMAC_SHA1_32 inline:${Buffer.alloc(30, 1).toString('base64')}\r\na=crypto:2 AES_CM_128_HMAC_SHA1_80 inline:${key}|2^31\r\na=sendrecv`,
  );
  const read = readOffer(savp);
  assert.ok(read.ok);
  assert.equal(read.offer.protocol, 'RTP/SAVP');
  assert.equal(read.offer.crypto?.tag, 2);
  assert.deepEqual(read.offer.crypto?.key, Buffer.alloc(16, 7));
  assert.deepEqual(read.offer.crypto?.salt, Buffer.alloc(14, 7));
  const local = { key: Buffer.alloc(16, 9), salt: Buffer.alloc(14, 9) };
  const answer = writeAnswer({ sessionId: 1, version: 1, address: '127.0.0.1', rtpPort: 30000, rtcpPort: 30001, offer: read.offer, localCrypto: local });
  assert.match(answer, /m=audio 30000 RTP\/SAVP 0 101\r\n/);
  assert.match(answer, new RegExp(`a=crypto:2 AES_CM_128_HMAC_SHA1_80 inline:${Buffer.alloc(30, 9).toString('base64').replace(/\+/g, '\\+')}\r\n`));
  const only32 = readOffer(savp.replace(/a=crypto:2 [^\r]*\r\n/, ''));
  assert.ok(!only32.ok && /no SRTP key/.test(only32.reason));
  // A plain offer's answer has no key, whatever is passed.
  assert.doesNotMatch(writeAnswer({ sessionId: 1, version: 1, address: '127.0.0.1', rtpPort: 30000, rtcpPort: 30001, offer: (readOffer(SDP) as any).offer, localCrypto: local }), /crypto/);
});

test('SRTP: what one side protects the other reads; a tampered or foreign packet is dropped, not thrown', () => {
  const a = { key: randomBytes(16), salt: randomBytes(14) };
  const b = { key: randomBytes(16), salt: randomBytes(14) };
  const alice = new SrtpChannel({ local: a, remote: b });
  const bob = new SrtpChannel({ local: b, remote: a });
  const rtp = Buffer.concat([Buffer.from([0x80, 0x00, 0x12, 0x34, 0, 0, 0x03, 0x20, 0xde, 0xad, 0xbe, 0xef]), Buffer.alloc(160, 0x55)]);
  const sent = alice.protectRtp(rtp);
  assert.notDeepEqual(sent.subarray(12, 172), rtp.subarray(12), 'the payload is encrypted');
  assert.deepEqual(bob.unprotectRtp(sent), rtp);
  const tampered = Buffer.from(alice.protectRtp(Buffer.concat([rtp.subarray(0, 3), Buffer.from([0x35]), rtp.subarray(4)])));
  tampered[40]! ^= 1;
  assert.equal(bob.unprotectRtp(tampered), undefined);
  assert.equal(bob.unprotectRtp(randomBytes(100)), undefined);
  assert.equal(bob.unprotectRtp(Buffer.alloc(3)), undefined);
  const rtcp = Buffer.from([0x80, 201, 0, 1, 0xde, 0xad, 0xbe, 0xef]);
  assert.deepEqual(alice.unprotectRtcp(bob.protectRtcp(rtcp)), rtcp);
  assert.equal(alice.unprotectRtcp(randomBytes(40)), undefined);
});
