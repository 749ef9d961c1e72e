// Outbound SIP calls' pure parts: reading the app's destination, the toll-fraud patterns, what a
// final status means, and our SDP offer read back the way a callee's answer is read.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readOffer, writeOffer } from '../../src/calls/sip/sdp.ts';
import { globMatches, readDestination } from '../../src/sip/outboundCalls.ts';
import { failureOf } from '../../src/sip/outboundInvite.ts';

test('destinations: numbers (bare or tel:), SIP URIs with or without a port, registered user names; anything else is refused', () => {
  assert.deepEqual(readDestination('+4930123456'), { kind: 'number', number: '+4930123456' });
  assert.deepEqual(readDestination('tel:+4930123456'), { kind: 'number', number: '+4930123456' });
  assert.deepEqual(readDestination('sip:bob@10.0.0.5:5070'), { kind: 'uri', uri: 'sip:bob@10.0.0.5:5070', user: 'bob', host: '10.0.0.5', port: 5070 });
  assert.deepEqual(readDestination('sip:bob@pbx.example.com'), { kind: 'uri', uri: 'sip:bob@pbx.example.com', user: 'bob', host: 'pbx.example.com', port: 5060 });
  assert.deepEqual(readDestination('alice'), { kind: 'user', user: 'alice' });
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
