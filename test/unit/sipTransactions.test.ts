// SIP server transactions (RFC 3261 §17.2) on mocked timers: a failure response to an INVITE resent
// over UDP (Timer G) until its ACK or Timer H, the ACK absorbed while confirmed (Timer I), a 2xx left
// to the dialog; a non-INVITE's final response kept for its retransmissions (Timer J); and requests
// matched to their transaction by branch, sent-by and method.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Peer } from '../../src/sip/listener.ts';
import { parseMessage, type SipRequest } from '../../src/sip/message.ts';
import { InviteServerTransaction, ServerTransactions } from '../../src/sip/serverTransactions.ts';

const UDP: Peer = { transport: 'udp', address: '192.0.2.9', port: 5060 };
const TCP: Peer = { transport: 'tcp', address: '192.0.2.9', port: 40000 };

function request(method: string, opts: { branch?: string; sentBy?: string; cseq?: string } = {}): SipRequest {
  const text = [
    `${method} sip:agent@example.com SIP/2.0`,
    `Via: SIP/2.0/UDP ${opts.sentBy ?? '192.0.2.9:5060'};branch=${opts.branch ?? 'z9hG4bKone'}`,
    'From: <sip:bob@example.com>;tag=1',
    'To: <sip:agent@example.com>',
    'Call-ID: call-1',
    `CSeq: ${opts.cseq ?? `1 ${method}`}`,
    'Content-Length: 0',
    '',
    '',
  ].join('\r\n');
  const parsed = parseMessage(Buffer.from(text));
  assert.ok(parsed.ok && parsed.message.kind === 'request');
  return parsed.message;
}

/** A table and one transaction for `req` from `peer`, with what it sent. */
function opened(req: SipRequest, peer: Peer) {
  const table = new ServerTransactions();
  const sent: string[] = [];
  const tx = table.open(req, peer, (bytes) => sent.push(bytes.toString()))!;
  return { table, tx, sent };
}

test('a failure response to an INVITE over UDP is resent (Timer G: T1 doubling to T2) until Timer H gives up', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const { table, tx, sent } = opened(request('INVITE'), UDP);
  assert.ok(tx instanceof InviteServerTransaction);
  tx.respond(100, Buffer.from('100'));
  tx.respond(486, Buffer.from('486'));
  assert.equal(tx.state, 'completed');
  assert.deepEqual(sent, ['100', '486']);
  const at: number[] = [];
  let now = 0;
  for (; now < 40_000; now += 100) {
    const before = sent.length;
    t.mock.timers.tick(100);
    if (sent.length > before) at.push(now + 100);
  }
  // 0.5, 1.5, 3.5, 7.5 s, then every 4 s until 32 s.
  assert.deepEqual(at, [500, 1500, 3500, 7500, 11_500, 15_500, 19_500, 23_500, 27_500, 31_500]);
  assert.equal(tx.state, 'terminated');
  assert.equal(table.find(request('INVITE')), undefined);
});

test("the failure's ACK stops Timer G; its retransmissions are absorbed until Timer I ends the transaction", (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const { table, tx, sent } = opened(request('INVITE'), UDP);
  tx.respond(401, Buffer.from('401'));
  t.mock.timers.tick(600);
  assert.equal(sent.length, 2, 'resent once before the ACK');
  const ack = request('ACK', { cseq: '1 ACK' });
  const invite = table.find(ack, 'INVITE');
  assert.equal(invite, tx, 'the ACK matches its INVITE');
  assert.equal((invite as InviteServerTransaction).acknowledged(), true);
  assert.equal(tx.state, 'confirmed');
  assert.equal((invite as InviteServerTransaction).acknowledged(), true, 'a retransmitted ACK is absorbed');
  t.mock.timers.tick(4900);
  assert.equal(sent.length, 2, 'nothing resent once acknowledged');
  assert.equal(tx.state, 'confirmed');
  t.mock.timers.tick(100);
  assert.equal(tx.state, 'terminated');
  assert.equal(table.find(ack, 'INVITE'), undefined);
});

test('over a stream a failure is sent once, and its ACK ends the transaction at once', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const { tx, sent } = opened(request('INVITE'), TCP);
  tx.respond(403, Buffer.from('403'));
  t.mock.timers.tick(10_000);
  assert.deepEqual(sent, ['403']);
  assert.equal((tx as InviteServerTransaction).acknowledged(), true);
  assert.equal(tx.state, 'terminated');
});

test("a 2xx leaves the ACK to the dialog; a retransmitted INVITE gets the 2xx again until Timer L", (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const { table, tx, sent } = opened(request('INVITE'), UDP);
  tx.respond(180, Buffer.from('180'));
  tx.retransmitted();
  assert.deepEqual(sent, ['180', '180'], 'while it rings, the last provisional answer');
  tx.respond(200, Buffer.from('200'));
  assert.equal(tx.state, 'accepted');
  tx.respond(500, Buffer.from('500'));
  assert.deepEqual(sent, ['180', '180', '200'], 'one final response only');
  assert.equal((tx as InviteServerTransaction).acknowledged(), false, "the 2xx's ACK is the dialog's");
  t.mock.timers.tick(10_000);
  assert.equal(sent.length, 3, 'the transaction does not resend a 2xx');
  table.find(request('INVITE'))!.retransmitted();
  assert.equal(sent.at(-1), '200');
  t.mock.timers.tick(22_000);
  assert.equal(tx.state, 'terminated');
  assert.equal(table.find(request('INVITE')), undefined);
});

test("a non-INVITE's final response answers its retransmissions until Timer J", (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const { table, tx, sent } = opened(request('BYE'), TCP);
  assert.equal(tx.state, 'trying');
  tx.retransmitted();
  assert.deepEqual(sent, [], 'nothing to resend yet');
  tx.respond(200, Buffer.from('200'));
  assert.equal(tx.state, 'completed');
  table.find(request('BYE'))!.retransmitted();
  assert.deepEqual(sent, ['200', '200']);
  t.mock.timers.tick(32_000);
  assert.equal(tx.state, 'terminated');
  assert.equal(table.find(request('BYE')), undefined);
});

test('requests match their transaction by branch, sent-by and method (an ACK and a CANCEL, their INVITE)', () => {
  const table = new ServerTransactions();
  const invite = table.open(request('INVITE'), UDP, () => {})!;
  assert.equal(table.find(request('INVITE')), invite);
  assert.equal(table.find(request('CANCEL', { cseq: '1 CANCEL' }), 'INVITE'), invite);
  assert.equal(table.find(request('INVITE', { sentBy: '192.0.2.10:5060' })), undefined, 'another sender');
  assert.equal(table.find(request('INVITE', { branch: 'z9hG4bKtwo' })), undefined, 'another branch');
  assert.equal(table.find(request('CANCEL', { cseq: '1 CANCEL' })), undefined, 'the CANCEL is a transaction of its own');
  // RFC 2543 peers (no branch cookie): Call-ID, From and CSeq number.
  const old = table.open(request('INVITE', { branch: '1' }), UDP, () => {})!;
  assert.equal(table.find(request('ACK', { branch: '2', cseq: '1 ACK' })), old);
  table.close();
});
