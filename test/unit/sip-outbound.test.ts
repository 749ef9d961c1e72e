// Outbound SIP calls' pure parts: reading the app's destination, the toll-fraud patterns, what a
// final status means, and our SDP offer read back the way a callee's answer is read.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readOffer, writeOffer } from '../../src/calls/sip/sdp.ts';
import { destinationAllowed, globMatches, readDestination } from '../../src/sip/outboundCalls.ts';
import { failureOf } from '../../src/sip/outboundInvite.ts';

test('destinations: numbers (bare or tel:), SIP URIs with or without a port, registered user names; anything else is refused', () => {
  assert.deepEqual(readDestination('+4930123456'), { kind: 'number', number: '+4930123456' });
  assert.deepEqual(readDestination('tel:+4930123456'), { kind: 'number', number: '+4930123456' });
  assert.deepEqual(readDestination('sip:bob@10.0.0.5:5070'), { kind: 'uri', uri: 'sip:bob@10.0.0.5:5070', user: 'bob', host: '10.0.0.5', port: 5070 });
  assert.deepEqual(readDestination('sip:bob@pbx.example.com'), { kind: 'uri', uri: 'sip:bob@pbx.example.com', user: 'bob', host: 'pbx.example.com', port: 5060 });
  assert.deepEqual(readDestination('alice'), { kind: 'user', user: 'alice' });
  // A SIP URI whose user part has no letter dials that number (visual separators dropped).
  assert.deepEqual(readDestination('sip:+1-900-555-1234@pbx.example.com'), { kind: 'uri', uri: 'sip:+1-900-555-1234@pbx.example.com', user: '+1-900-555-1234', host: 'pbx.example.com', port: 5060, number: '+19005551234' });
  assert.deepEqual(readDestination('sip:0019005551234@pbx.example.com:5070'), { kind: 'uri', uri: 'sip:0019005551234@pbx.example.com:5070', user: '0019005551234', host: 'pbx.example.com', port: 5070, number: '0019005551234' });
  for (const bad of ['sip:bob@host with spaces', 'sip:bob@h:99999', 'sips:bob@h', '+12', 'sip:<bob>@h', 'a\r\nVia: x', 'sip:@host', '']) assert.equal(readDestination(bad), undefined, bad);
});

test('patterns: * spans any characters, everything else is literal, the whole destination must match', () => {
  assert.ok(globMatches('+4930*', '+4930123456'));
  assert.ok(!globMatches('+4930*', '+4940123456'));
  assert.ok(!globMatches('+4930', '+49301'));
  assert.ok(globMatches('sip:*@127.0.0.1:*', 'sip:bob@127.0.0.1:5070'));
  // A dot is a dot, not any character.
  assert.ok(!globMatches('sip:*@10.0.0.5', 'sip:bob@10a0b0c5'));
  assert.ok(globMatches('*', 'anything'));
});

test("patterns by kind: the docs' example lets its numbers, alice and the PBX's named users be called, and nothing else; * alone is every registered user, never every number", () => {
  const allowed = (patterns: string, to: string) => destinationAllowed(patterns.split(','), readDestination(to)!);
  const docs = '+4930*,alice,sip:*@pbx.example.com';
  for (const to of ['+4930123456', 'tel:+4930123456', 'sip:+4930123456@pbx.example.com', 'sip:+49-30-123456@pbx.example.com', 'alice', 'sip:frontdesk@pbx.example.com']) assert.ok(allowed(docs, to), to);
  // The number dialled must match a number pattern, however it is written.
  for (const to of ['+19005551234', 'tel:+19005551234', 'sip:+19005551234@pbx.example.com', 'sip:0019005551234@pbx.example.com', 'sip:19005551234@pbx.example.com', 'sip:*67+19005551234@pbx.example.com', 'sip:+1(900)555-1234@pbx.example.com'])
    assert.ok(!allowed(docs, to), to);
  assert.ok(!allowed(docs, 'sip:frontdesk@evil.example.net'), 'another host');
  assert.ok(!allowed(docs, 'bob'), 'another registered user');
  // `*`: any registered user, and nothing more.
  assert.ok(allowed('*', 'bob'));
  for (const to of ['+19005551234', 'tel:+19005551234', 'sip:bob@pbx.example.com', 'sip:+19005551234@pbx.example.com']) assert.ok(!allowed('*', to), to);
  // A pattern starting with a digit is a number's (a PBX's extensions) and a registered user's name.
  assert.ok(allowed('10*,sip:*@pbx.example.com', 'sip:1001@pbx.example.com'));
  assert.ok(allowed('1001', '1001'));
  assert.ok(!allowed('sip:*@pbx.example.com', 'sip:1001@pbx.example.com'), 'an extension needs a number pattern too');
  // tel: in a pattern is a number's.
  assert.ok(allowed('tel:+4930*', '+4930123'));
});

test('what a final status means: busy, no answer (also our CANCEL at the ring timeout), rejected', () => {
  assert.equal(failureOf(486, false), 'busy');
  assert.equal(failureOf(600, false), 'busy');
  assert.equal(failureOf(480, false), 'no_answer');
  assert.equal(failureOf(408, false), 'no_answer');
  assert.equal(failureOf(487, true), 'no_answer');
  assert.equal(failureOf(487, false), 'rejected');
  assert.equal(failureOf(603, false), 'rejected');
  assert.equal(failureOf(404, false), 'rejected');
});

test('our offer: Opus first, then PCMU and PCMA, key presses and comfort noise; a callee answering with PCMU is read as PCMU with its events', () => {
  const offer = writeOffer({ sessionId: 7, address: '192.0.2.10', rtpPort: 40000, rtcpPort: 40001 });
  const read = readOffer(offer);
  assert.ok(read.ok);
  assert.equal(read.offer.codec, 'opus');
  assert.equal(read.offer.dtmfPayloadType, 101);
  assert.equal(read.offer.rtcpPort, 40001);
  const answer = 'v=0\r\no=- 1 1 IN IP4 192.0.2.20\r\ns=-\r\nc=IN IP4 192.0.2.20\r\nt=0 0\r\nm=audio 17318 RTP/AVP 0 101\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:101 telephone-event/8000\r\na=sendrecv\r\n';
  const taken = readOffer(answer);
  assert.ok(taken.ok);
  assert.deepEqual([taken.offer.codec, taken.offer.payloadType, taken.offer.dtmfPayloadType, taken.offer.address, taken.offer.port], ['pcmu', 0, 101, '192.0.2.20', 17318]);
});
