// What the SIP door checks before handling a request: Max-Forwards 0 (483), an unsupported Require
// (420 with Unsupported), the same request arriving again by another branch (merged: 482); and the
// key presses SIP INFO carries (application/dtmf-relay, application/dtmf).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readDtmfInfo } from '../../src/sip/dtmfInfo.ts';
import { parseMessage, type SipRequest } from '../../src/sip/message.ts';
import { refusalOf } from '../../src/sip/requestChecks.ts';
import { ServerTransactions } from '../../src/sip/serverTransactions.ts';

function request(method: string, opts: { branch?: string; headers?: string[]; toTag?: string } = {}): SipRequest {
  const text = [
    `${method} sip:agent@example.com SIP/2.0`,
    `Via: SIP/2.0/UDP 192.0.2.9:5060;branch=${opts.branch ?? 'z9hG4bKone'}`,
    'From: <sip:bob@example.com>;tag=1',
    `To: <sip:agent@example.com>${opts.toTag ? `;tag=${opts.toTag}` : ''}`,
    'Call-ID: call-1',
    `CSeq: 1 ${method}`,
    ...(opts.headers ?? []),
    'Content-Length: 0',
    '',
    '',
  ].join('\r\n');
  const parsed = parseMessage(Buffer.from(text));
  assert.ok(parsed.ok && parsed.message.kind === 'request');
  return parsed.message;
}

test('Require with extensions we lack: 420 naming them; Max-Forwards 0: 483 (OPTIONS still answered)', () => {
  assert.equal(refusalOf(request('INVITE')), undefined);
  assert.equal(refusalOf(request('INVITE', { headers: ['Supported: 100rel, timer'] })), undefined, 'Supported asks nothing');
  const refused = refusalOf(request('INVITE', { headers: ['Require: 100rel', 'Require: precondition, 100rel'] }));
  assert.deepEqual(refused, { status: 420, reason: 'Bad Extension', headers: [['Unsupported', '100rel, precondition']] });
  assert.equal(refusalOf(request('BYE', { headers: ['Require: timer'] }))?.status, 420);
  assert.equal(refusalOf(request('ACK', { headers: ['Require: timer'] })), undefined, 'an ACK is never answered');
  assert.equal(refusalOf(request('INVITE', { headers: ['Max-Forwards: 0'] }))?.status, 483);
  assert.equal(refusalOf(request('OPTIONS', { headers: ['Max-Forwards: 0'] })), undefined);
  assert.equal(refusalOf(request('INVITE', { headers: ['Max-Forwards: 1'] })), undefined);
});

test('the same request by another branch is merged (a fork or a loop); its own retransmission is not', () => {
  const table = new ServerTransactions();
  const peer = { transport: 'udp' as const, address: '192.0.2.9', port: 5060 };
  const first = request('INVITE', { branch: 'z9hG4bKone' });
  assert.equal(table.merged(first), false);
  table.open(first, peer, () => {});
  assert.equal(table.merged(request('INVITE', { branch: 'z9hG4bKone' })), false, 'a retransmission is its own transaction');
  assert.equal(table.merged(request('INVITE', { branch: 'z9hG4bKtwo' })), true, 'forked or looped back');
  table.close();
  assert.equal(table.merged(request('INVITE', { branch: 'z9hG4bKtwo' })), false, 'once the first is gone, nothing to merge with');
});

test('SIP INFO key presses: dtmf-relay and dtmf bodies, events 10-15, other types unsupported', () => {
  assert.equal(readDtmfInfo('application/dtmf-relay', 'Signal=5\r\nDuration=160\r\n'), '5');
  assert.equal(readDtmfInfo('Application/DTMF-Relay; charset=x', 'Signal= *\r\nDuration= 250\r\n'), '*');
  assert.equal(readDtmfInfo('application/dtmf-relay', 'Signal=11\r\nDuration=160\r\n'), '#');
  assert.equal(readDtmfInfo('application/dtmf', '9'), '9');
  assert.equal(readDtmfInfo('application/dtmf', '15\r\n'), 'D');
  assert.equal(readDtmfInfo('application/dtmf', 'x'), undefined);
  assert.equal(readDtmfInfo('application/dtmf-relay', 'Duration=160'), undefined);
  assert.equal(readDtmfInfo('application/media_control+xml', '<x/>'), 'unsupported');
});
