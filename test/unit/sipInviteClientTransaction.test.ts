// The INVITE client transaction (RFC 3261 §17.1.1, RFC 6026 §8.4) on mocked timers and a fake wire
// (test/helpers/fakeSip.ts): each state and what moves it on — Timer A's resends over UDP (none over
// TCP), Timer B's timeout told to the user, a 1xx making it proceeding, a 2xx accepted until Timer M
// with each retransmission passed up (the dialog ACKs it), a failure ACKed by the transaction itself
// and completed until Timer D — and responses matched to it by branch and method.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { InviteClientTransactions, type InviteClientUser, type OutgoingInvite } from '../../src/sip/inviteClientTransaction.ts';
import type { Peer } from '../../src/sip/listener.ts';
import { parseMessage, type SipResponse } from '../../src/sip/message.ts';
import { CALLEE, CALLEE_TCP, FakeWire, responseOf } from '../helpers/fakeSip.ts';

function outgoing(branch = 'z9hG4bKinvite1'): OutgoingInvite {
  return {
    branch,
    uri: 'sip:bob@192.0.2.20',
    headers: [
      ['Via', `SIP/2.0/UDP 192.0.2.10:5060;branch=${branch};rport`],
      ['Max-Forwards', '70'],
      ['Route', '<sip:proxy.example.com;lr>'],
      ['From', '<sip:parley@192.0.2.10>;tag=ours'],
      ['To', '<sip:bob@192.0.2.20>'],
      ['Call-ID', 'call-1'],
      ['CSeq', '1 INVITE'],
      ['Contact', '<sip:parley@192.0.2.10:5060>'],
      ['Content-Type', 'application/sdp'],
    ],
    body: 'v=0\r\n',
  };
}

/** A table, one transaction to `peer` in it, what went out, and what its user was told. */
function started(t: TestContext, peer: Peer = CALLEE) {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const wire = new FakeWire();
  const table = new InviteClientTransactions(wire.send);
  const told: string[] = [];
  const user: InviteClientUser = { response: (res) => void told.push(`response ${res.status}`), timedOut: () => void told.push('timedOut') };
  const tx = table.start(peer, outgoing(), user);
  const invite = wire.last('INVITE');
  const respond = (status: number, toTag = 'theirs'): SipResponse => responseOf(invite, status, { toTag });
  return { wire, table, tx, told, invite, respond };
}

/** When (ms from now, in 100 ms steps up to `until`) something was sent. */
function sendTimes(t: TestContext, wire: FakeWire, until: number): number[] {
  const at: number[] = [];
  for (let now = 0; now < until; now += 100) {
    const before = wire.sent.length;
    t.mock.timers.tick(100);
    if (wire.sent.length > before) at.push(now + 100);
  }
  return at;
}

test('calling over UDP: the INVITE resent at T1 doubling (Timer A: 0.5, 1.5, 3.5, 7.5, 15.5, 31.5 s); Timer B at 64·T1 tells the user, a 408 for it', (t) => {
  const { wire, table, tx, told } = started(t);
  assert.equal(tx.state, 'calling');
  assert.deepEqual(wire.summary, ['INVITE']);
  assert.deepEqual(sendTimes(t, wire, 40_000), [500, 1500, 3500, 7500, 15_500, 31_500]);
  assert.ok(wire.sent.every(({ message }) => message.kind === 'request' && message.method === 'INVITE' && message.branch === 'z9hG4bKinvite1'));
  assert.deepEqual(told, ['timedOut']);
  assert.equal(tx.state, 'terminated');
  assert.equal(table.size, 0);
});

test('calling over TCP: nothing resent (the stream retransmits); Timer B still gives up at 64·T1', (t) => {
  const { wire, tx, told } = started(t, CALLEE_TCP);
  t.mock.timers.tick(31_999);
  assert.deepEqual(wire.summary, ['INVITE']);
  assert.deepEqual(told, []);
  t.mock.timers.tick(1);
  assert.deepEqual(told, ['timedOut']);
  assert.equal(tx.state, 'terminated');
});

test('a provisional response makes it proceeding: passed up, each one; no more resends, and no Timer B (the user decides how long it rings)', (t) => {
  const { wire, table, tx, told, respond } = started(t);
  t.mock.timers.tick(600);
  assert.deepEqual(wire.summary, ['INVITE', 'INVITE']);
  assert.equal(table.received(respond(100)), true);
  assert.equal(tx.state, 'proceeding');
  table.received(respond(180));
  table.received(respond(183));
  assert.deepEqual(told, ['response 100', 'response 180', 'response 183']);
  t.mock.timers.tick(120_000);
  assert.deepEqual(wire.summary, ['INVITE', 'INVITE']);
  assert.deepEqual(told, ['response 100', 'response 180', 'response 183']);
  assert.equal(tx.state, 'proceeding');
});

test('a 2xx while calling makes it accepted: passed up, not ACKed by the transaction; resends stop', (t) => {
  const { wire, table, tx, told, respond } = started(t);
  table.received(respond(200));
  assert.equal(tx.state, 'accepted');
  assert.deepEqual(told, ['response 200']);
  t.mock.timers.tick(10_000);
  assert.deepEqual(wire.summary, ['INVITE']);
});

test('accepted (from proceeding): each retransmitted 2xx passed up for the dialog to ACK again, other responses dropped, until Timer M', (t) => {
  const { wire, table, tx, told, respond } = started(t);
  table.received(respond(180));
  table.received(respond(200));
  assert.equal(tx.state, 'accepted');
  t.mock.timers.tick(500);
  table.received(respond(200));
  table.received(respond(183));
  table.received(respond(486));
  t.mock.timers.tick(1000);
  table.received(respond(200));
  assert.deepEqual(told, ['response 180', 'response 200', 'response 200', 'response 200']);
  assert.deepEqual(wire.summary, ['INVITE'], 'the transaction ACKs no 2xx');
  t.mock.timers.tick(32_000 - 1500 - 1);
  assert.equal(tx.state, 'accepted');
  t.mock.timers.tick(1);
  assert.equal(tx.state, 'terminated');
  assert.equal(table.size, 0);
  assert.equal(table.received(respond(200)), false, 'after Timer M the branch is no longer ours');
});

test('a failure response: ACKed by the transaction (our Via, Route, From, Call-ID and CSeq number, its To), completed; its retransmissions ACKed again, not passed up; Timer D ends it', (t) => {
  const { wire, table, tx, told, respond, invite } = started(t);
  table.received(respond(180));
  table.received(respond(486));
  assert.equal(tx.state, 'completed');
  assert.deepEqual(told, ['response 180', 'response 486']);
  const ack = wire.last('ACK');
  assert.equal(ack.uri, invite.uri);
  assert.deepEqual(ack.headers.all('via'), [invite.headers.all('via')[0]]);
  assert.equal(ack.branch, invite.branch);
  assert.deepEqual(ack.headers.all('route'), ['<sip:proxy.example.com;lr>']);
  assert.equal(ack.from, invite.from);
  assert.equal(ack.to, '<sip:bob@192.0.2.20>;tag=theirs');
  assert.equal(ack.callId, 'call-1');
  assert.deepEqual(ack.cseq, { seq: 1, method: 'ACK' });
  assert.equal(ack.headers.get('contact'), undefined);
  assert.equal(ack.body.length, 0);
  // The callee did not hear our ACK: its 486 again, our ACK again.
  t.mock.timers.tick(500);
  table.received(respond(486));
  assert.deepEqual(wire.summary, ['INVITE', 'ACK', 'ACK']);
  assert.deepEqual(told, ['response 180', 'response 486']);
  table.received(respond(200));
  assert.deepEqual(told, ['response 180', 'response 486'], 'a 2xx after a failure is dropped');
  t.mock.timers.tick(32_000 - 500 - 1);
  assert.equal(tx.state, 'completed');
  t.mock.timers.tick(1);
  assert.equal(tx.state, 'terminated');
  assert.equal(table.size, 0);
});

test('a failure while calling over TCP: ACKed, and Timer D is 0 (terminated at once)', (t) => {
  const { wire, table, tx, told, respond } = started(t, CALLEE_TCP);
  table.received(respond(603));
  assert.deepEqual(wire.summary, ['INVITE', 'ACK']);
  assert.deepEqual(told, ['response 603']);
  assert.equal(tx.state, 'terminated');
  assert.equal(table.size, 0);
});

test('matched by branch and method: the CANCEL of the same branch is not this transaction, nor is another branch', (t) => {
  const { table, told, invite } = started(t);
  const response = (status: number, cseq: string, branch = invite.branch): SipResponse => {
    const via = invite.headers.all('via')[0]!.replace(invite.branch, branch);
    const parsed = parseMessage(Buffer.from(`SIP/2.0 ${status} X\r\nVia: ${via}\r\nFrom: ${invite.from}\r\nTo: ${invite.to};tag=theirs\r\nCall-ID: call-1\r\nCSeq: ${cseq}\r\nContent-Length: 0\r\n\r\n`));
    assert.ok(parsed.ok && parsed.message.kind === 'response');
    return parsed.message;
  };
  assert.equal(table.received(response(200, '1 CANCEL')), false);
  assert.equal(table.received(response(180, '1 INVITE', 'z9hG4bKother')), false);
  assert.equal(table.received(response(180, '1 INVITE')), true);
  assert.deepEqual(told, ['response 180']);
});

test('terminated by its user (no final response after the CANCEL, §9.1): forgotten, later responses not ours', (t) => {
  const { table, tx, told, respond } = started(t);
  table.received(respond(180));
  tx.terminate();
  assert.equal(tx.state, 'terminated');
  assert.equal(table.size, 0);
  assert.equal(table.received(respond(487)), false);
  assert.deepEqual(told, ['response 180']);
});
