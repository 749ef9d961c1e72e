// The SIP client half in-process, on mocked timers and a fake wire and core (test/helpers/fakeSip.ts)
// with the real transactions and dialogs: the UAC core (a digest challenge answered once; a CANCEL
// only after a provisional response, and the INVITE given up 64·T1 after it without a final one),
// the dialog a 2xx opens (its ACK through the route set, again for each retransmitted 2xx; BYE inside
// it; retired a transaction's time after it ends), and what an outbound call makes of the outcome
// (answered, busy, no answer, unreachable, rejected; an answer that crossed our CANCEL hung up and
// its dialog retired: issue 43's leak).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test, type TestContext } from 'node:test';
import { ClientTransactions } from '../../src/sip/clientTransactions.ts';
import { Dialogs, type Dialog } from '../../src/sip/dialogs.ts';
import { InviteClientTransactions } from '../../src/sip/inviteClientTransaction.ts';
import { param, type SipRequest, type SipResponse } from '../../src/sip/message.ts';
import { OutboundInvite } from '../../src/sip/outboundInvite.ts';
import { UacInvite, type InviteTarget, type UacParts } from '../../src/sip/uac.ts';
import { CALLEE, FakeWire, fakeCall, fakeCore, fakeSipTransport, responseOf } from '../helpers/fakeSip.ts';

const TARGET: InviteTarget = { uri: 'sip:+4930123456@192.0.2.20:5060', peer: CALLEE, from: '<sip:+4930999@192.0.2.20>' };
const CREDENTIALS = { user: 'trunkuser', password: 'trunkpass' };
const ANSWER_SDP = 'v=0\r\no=- 1 1 IN IP4 192.0.2.30\r\ns=-\r\nc=IN IP4 192.0.2.30\r\nt=0 0\r\nm=audio 17318 RTP/AVP 0 101\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:101 telephone-event/8000\r\na=sendrecv\r\n';
/** The callee's 2xx: its Contact, and two proxies' Record-Route as they list themselves (nearest the callee first). */
const OK_HEADERS = ['Contact: <sip:bob@192.0.2.30:5062>', 'Record-Route: <sip:p2.example.com;lr>, <sip:p1.example.com;lr>', 'Content-Type: application/sdp'];

/** Tests whose timers are mocked already (a test may set up several calls). */
const mocked = new WeakSet<TestContext>();

/** The SIP client half on a fake wire, as the server puts it together (sipServer.ts). */
function clientHalf(t: TestContext) {
  if (!mocked.has(t)) t.mock.timers.enable({ apis: ['setTimeout', 'Date'] });
  mocked.add(t);
  const wire = new FakeWire();
  const log: string[] = [];
  const core = fakeCore(wire, log);
  const requests = new ClientTransactions(wire.send);
  const invites = new InviteClientTransactions(wire.send);
  const dialogs = new Dialogs(core, requests);
  const parts: UacParts = { core, invites, requests, dialogs };
  /** A response from the callee, routed as the server routes it. */
  const deliver = (res: SipResponse) => {
    if (!invites.received(res)) requests.received(res);
  };
  return { wire, log, parts, invites, requests, dialogs, deliver };
}

/** A UAC core of one INVITE to `target`, and what it told its user. */
function uacOf(t: TestContext, target: InviteTarget = TARGET) {
  const half = clientHalf(t);
  const told: string[] = [];
  const dialogs: Dialog[] = [];
  const call = fakeCall();
  const transport = fakeSipTransport();
  const uac = new UacInvite(half.parts, target, { headers: [['Content-Type', 'application/sdp']], body: 'v=0\r\n' }, { conversationId: 'conv_1', transport, sessionId: 7, observe: call.observe }, {
    answered: (dialog, res) => {
      dialogs.push(dialog);
      told.push(`answered ${res.status}`);
    },
    failed: (status, why) => void told.push(`failed ${status} ${why}`),
  });
  return { ...half, uac, told, answeredDialogs: dialogs, call, transport };
}

const md5 = (s: string) => createHash('md5').update(s).digest('hex');

test('a 2xx opens the dialog (§12.1.2): the route set is its Record-Route reversed, the remote target its Contact; ACKed through them with the INVITE\'s CSeq, again for each retransmitted 2xx', (t) => {
  const { wire, uac, told, answeredDialogs, deliver, dialogs } = uacOf(t);
  uac.start();
  const invite = wire.last('INVITE');
  assert.equal(invite.uri, TARGET.uri);
  assert.equal(invite.callId, uac.callId);
  assert.deepEqual(invite.cseq, { seq: 1, method: 'INVITE' });
  assert.equal(invite.headers.get('contact'), '<sip:parley@192.0.2.10:5060>');
  deliver(responseOf(invite, 180, { toTag: 'bob1' }));
  deliver(responseOf(invite, 200, { toTag: 'bob1', headers: OK_HEADERS, body: ANSWER_SDP }));
  assert.deepEqual(told, ['answered 200']);
  const dialog = answeredDialogs[0]!;
  assert.deepEqual(dialog.routeSet, ['<sip:p1.example.com;lr>', '<sip:p2.example.com;lr>']);
  assert.equal(dialog.remoteTarget, 'sip:bob@192.0.2.30:5062');
  assert.equal(param(dialog.remoteUri, 'tag'), 'bob1');
  assert.equal(dialog.localUri, invite.from);
  assert.equal(dialogs.size, 1);
  const ack = wire.last('ACK');
  assert.equal(ack.uri, 'sip:bob@192.0.2.30:5062');
  assert.deepEqual(ack.headers.all('route'), ['<sip:p1.example.com;lr>', '<sip:p2.example.com;lr>']);
  assert.deepEqual(ack.cseq, { seq: 1, method: 'ACK' });
  assert.notEqual(ack.branch, invite.branch, "a 2xx's ACK is a transaction of its own");
  assert.equal(param(ack.to, 'tag'), 'bob1');
  // The callee did not hear our ACK: its 2xx again, the same ACK again; the call is told once.
  t.mock.timers.tick(500);
  deliver(responseOf(invite, 200, { toTag: 'bob1', headers: OK_HEADERS, body: ANSWER_SDP }));
  assert.deepEqual(wire.summary, ['INVITE', 'ACK', 'ACK']);
  assert.equal(wire.requests('ACK')[1]!.branch, ack.branch);
  assert.deepEqual(told, ['answered 200']);
});

test('in the dialog: BYE through the route set with the next CSeq; the dialog retired 64·T1 after it ends', (t) => {
  const { wire, uac, answeredDialogs, deliver, dialogs } = uacOf(t);
  uac.start();
  const invite = wire.last('INVITE');
  deliver(responseOf(invite, 200, { toTag: 'bob1', headers: OK_HEADERS, body: ANSWER_SDP }));
  const dialog = answeredDialogs[0]!;
  dialogs.hangUp(dialog);
  const bye = wire.last('BYE');
  assert.equal(bye.uri, 'sip:bob@192.0.2.30:5062');
  assert.deepEqual(bye.headers.all('route'), ['<sip:p1.example.com;lr>', '<sip:p2.example.com;lr>']);
  assert.deepEqual(bye.cseq, { seq: 2, method: 'BYE' });
  assert.equal(bye.callId, invite.callId);
  deliver(responseOf(bye, 200));
  dialogs.hangUp(dialog);
  assert.equal(wire.requests('BYE').length, 1, 'one BYE');
  t.mock.timers.tick(31_999);
  assert.equal(dialogs.size, 1, 'kept a transaction\'s time for retransmitted requests');
  t.mock.timers.tick(1);
  assert.equal(dialogs.size, 0);
});

test("the call's end retires a dialog too (one opened as callee: §12.1.1's fields)", (t) => {
  const { wire, dialogs } = clientHalf(t);
  const call = fakeCall();
  const text = ['INVITE sip:agent@192.0.2.10 SIP/2.0', 'Via: SIP/2.0/UDP 192.0.2.40:5060;branch=z9hG4bKin', 'Record-Route: <sip:p1.example.com;lr>', 'Record-Route: <sip:p2.example.com;lr>', 'From: <sip:alice@192.0.2.40>;tag=a1', 'To: <sip:agent@192.0.2.10>', 'Call-ID: in-1', 'CSeq: 5 INVITE', 'Contact: <sip:alice@192.0.2.40:5060>', 'Content-Length: 0', '', ''].join('\r\n');
  wire.send(CALLEE, Buffer.from(text));
  const req = wire.last('INVITE') as SipRequest;
  const dialog = dialogs.open({ side: 'callee', invite: req, contact: req.headers.get('contact')!, localTag: 'ours' }, { conversationId: 'conv_2', peer: CALLEE, transport: fakeSipTransport(), sessionId: 9, observe: call.observe });
  assert.deepEqual([dialog.localUri, dialog.remoteUri, dialog.remoteTarget, dialog.localSeq], ['<sip:agent@192.0.2.10>;tag=ours', '<sip:alice@192.0.2.40>;tag=a1', 'sip:alice@192.0.2.40:5060', 0]);
  assert.deepEqual(dialog.routeSet, ['<sip:p1.example.com;lr>', '<sip:p2.example.com;lr>']);
  assert.equal(dialog.ack, undefined, 'a callee sends no ACK');
  assert.equal(dialogs.size, 1);
  call.end();
  assert.equal(dialog.ended, true);
  t.mock.timers.tick(32_000);
  assert.equal(dialogs.size, 0);
});

test('a digest challenge (401) answered once: a new transaction with the next CSeq and Authorization; the first one ACKed its 401; a second challenge is the failure', (t) => {
  const { wire, uac, told, deliver, invites } = uacOf(t, { ...TARGET, credentials: CREDENTIALS });
  uac.start();
  const first = wire.last('INVITE');
  assert.equal(first.headers.get('authorization'), undefined);
  deliver(responseOf(first, 401, { toTag: 't1', headers: ['WWW-Authenticate: Digest realm="trunk", nonce="n1", qop="auth"'] }));
  assert.deepEqual(wire.summary, ['INVITE', 'ACK', 'INVITE']);
  assert.equal(wire.last('ACK').branch, first.branch, "the 401's ACK is its transaction's");
  const second = wire.last('INVITE');
  assert.notEqual(second.branch, first.branch);
  assert.deepEqual(second.cseq, { seq: 2, method: 'INVITE' });
  assert.equal(second.callId, first.callId);
  assert.equal(second.from, first.from);
  const authorization = second.headers.get('authorization')!;
  const cnonce = /cnonce="([^"]+)"/.exec(authorization)![1]!;
  const expected = md5(`${md5('trunkuser:trunk:trunkpass')}:n1:00000001:${cnonce}:auth:${md5(`INVITE:${TARGET.uri}`)}`);
  assert.match(authorization, new RegExp(`^Digest username="trunkuser", realm="trunk", nonce="n1", uri="${TARGET.uri.replace(/[+.]/g, '\\$&')}", response="${expected}"`));
  assert.deepEqual(told, []);
  // The first 401 again (our ACK was lost): ACKed again by its transaction, no third INVITE.
  deliver(responseOf(first, 401, { toTag: 't1', headers: ['WWW-Authenticate: Digest realm="trunk", nonce="n1", qop="auth"'] }));
  assert.deepEqual(wire.summary, ['INVITE', 'ACK', 'INVITE', 'ACK']);
  // Challenged again: the credentials are wrong.
  deliver(responseOf(second, 401, { toTag: 't2', headers: ['WWW-Authenticate: Digest realm="trunk", nonce="n2"'] }));
  assert.deepEqual(told, ['failed 401 response']);
  assert.deepEqual(wire.summary, ['INVITE', 'ACK', 'INVITE', 'ACK', 'ACK']);
  t.mock.timers.tick(32_000);
  assert.equal(invites.size, 0, 'both transactions end with Timer D');
});

test('a proxy challenge (407) is answered with Proxy-Authorization; without credentials a challenge is a failure at once', (t) => {
  const { wire, uac, told, deliver } = uacOf(t, { ...TARGET, credentials: CREDENTIALS });
  uac.start();
  deliver(responseOf(wire.last('INVITE'), 407, { toTag: 't1', headers: ['Proxy-Authenticate: Digest realm="proxy", nonce="p1"'] }));
  assert.match(wire.last('INVITE').headers.get('proxy-authorization') ?? '', /^Digest username="trunkuser", realm="proxy", nonce="p1"/);
  assert.deepEqual(told, []);

  const bare = uacOf(t);
  bare.uac.start();
  bare.deliver(responseOf(bare.wire.last('INVITE'), 401, { toTag: 't1', headers: ['WWW-Authenticate: Digest realm="trunk", nonce="n1"'] }));
  assert.deepEqual(bare.wire.summary, ['INVITE', 'ACK']);
  assert.deepEqual(bare.told, ['failed 401 response']);
});

test('CANCEL only after a provisional response (§9.1): given up while calling, it waits for the 180, then goes on the INVITE\'s branch; the 487 is ACKed and told', (t) => {
  const { wire, uac, told, deliver } = uacOf(t);
  uac.start();
  const invite = wire.last('INVITE');
  uac.giveUp();
  t.mock.timers.tick(600);
  assert.deepEqual(wire.summary, ['INVITE', 'INVITE'], 'no CANCEL before the callee said something; Timer A goes on');
  deliver(responseOf(invite, 180, { toTag: 'bob1' }));
  const cancel = wire.last('CANCEL');
  assert.equal(cancel.uri, invite.uri);
  assert.equal(cancel.branch, invite.branch);
  assert.deepEqual(cancel.cseq, { seq: 1, method: 'CANCEL' });
  assert.equal(cancel.to, invite.to, 'the To of the INVITE, without the tag');
  assert.equal(cancel.from, invite.from);
  assert.equal(cancel.callId, invite.callId);
  uac.giveUp();
  deliver(responseOf(invite, 183, { toTag: 'bob1' }));
  assert.equal(wire.requests('CANCEL').length, 1, 'one CANCEL');
  deliver(responseOf(cancel, 200, { toTag: 'bob1' }));
  deliver(responseOf(invite, 487, { toTag: 'bob1' }));
  assert.deepEqual(told, ['failed 487 response']);
  assert.equal(wire.last('ACK').branch, invite.branch);
  t.mock.timers.tick(60_000);
  assert.deepEqual(told, ['failed 487 response'], 'the CANCEL timer was stopped by the final response');
});

test('given up while proceeding: CANCEL at once; no final response 64·T1 after it, the INVITE is given up (408)', (t) => {
  const { wire, uac, told, deliver, invites } = uacOf(t);
  uac.start();
  deliver(responseOf(wire.last('INVITE'), 180, { toTag: 'bob1' }));
  uac.giveUp();
  assert.deepEqual(wire.summary, ['INVITE', 'CANCEL']);
  deliver(responseOf(wire.last('CANCEL'), 200, { toTag: 'bob1' }));
  t.mock.timers.tick(31_999);
  assert.deepEqual(told, []);
  t.mock.timers.tick(1);
  assert.deepEqual(told, ['failed 408 cancelled']);
  assert.equal(invites.size, 0);
});

test('given up before any response, and nothing answers: no CANCEL ever; Timer B tells a 408 timeout', (t) => {
  const { wire, uac, told, invites } = uacOf(t);
  uac.start();
  uac.giveUp();
  t.mock.timers.tick(32_000);
  assert.deepEqual(told, ['failed 408 timeout']);
  assert.deepEqual(wire.requests('CANCEL'), []);
  assert.equal(invites.size, 0);
});

/** An outbound call's INVITE (OutboundInvite over the UAC core), with what the call was told. */
function outboundOf(t: TestContext, ringTimeoutMs = 20_000) {
  const half = clientHalf(t);
  const call = fakeCall();
  const transport = fakeSipTransport();
  const told: string[] = [];
  const invite = new OutboundInvite(half.parts, TARGET, { conversationId: 'conv_3', transport, ringTimeoutMs, observe: call.observe }, {
    answered: () => void told.push('answered'),
    failed: (reason, status) => void told.push(`failed ${reason} ${status}`),
  });
  invite.start();
  return { ...half, invite, call, transport, told, sent: half.wire.last('INVITE') };
}

test('an outbound call answered: our SDP offer sent, the answer negotiated, the status recorded; busy, declined and not found are told as such', (t) => {
  const answered = outboundOf(t);
  assert.equal(answered.sent.headers.get('content-type'), 'application/sdp');
  assert.match(answered.sent.body.toString(), /^m=audio 40000 RTP\/AVP /m);
  assert.equal(answered.sent.headers.get('x-parley-call-id'), 'conv_3');
  answered.deliver(responseOf(answered.sent, 200, { toTag: 'b', headers: OK_HEADERS, body: ANSWER_SDP }));
  assert.deepEqual(answered.told, ['answered']);
  assert.deepEqual(answered.transport.told, ['negotiated pcmu']);
  assert.equal(answered.transport.sipStatus, 200);
  for (const [status, reason] of [[486, 'busy'], [603, 'rejected'], [480, 'no_answer'], [404, 'rejected']] as const) {
    const o = outboundOf(t);
    o.deliver(responseOf(o.sent, status, { toTag: 'b' }));
    assert.deepEqual(o.told, [`failed ${reason} ${status}`]);
    assert.equal(o.transport.sipStatus, status);
  }
});

test('an outbound call: the ring timeout CANCELs it (487: no answer); a hang-up while it rings too (487: rejected); nothing at all: unreachable 408', (t) => {
  const ringing = outboundOf(t, 20_000);
  ringing.deliver(responseOf(ringing.sent, 180, { toTag: 'b' }));
  t.mock.timers.tick(20_000);
  ringing.deliver(responseOf(ringing.wire.last('CANCEL'), 200, { toTag: 'b' }));
  ringing.deliver(responseOf(ringing.sent, 487, { toTag: 'b' }));
  assert.deepEqual(ringing.told, ['failed no_answer 487']);

  const hungUp = outboundOf(t);
  hungUp.deliver(responseOf(hungUp.sent, 180, { toTag: 'b' }));
  hungUp.invite.hangUp();
  hungUp.deliver(responseOf(hungUp.sent, 487, { toTag: 'b' }));
  assert.deepEqual(hungUp.told, ['failed rejected 487']);

  const silent = outboundOf(t, 60_000);
  t.mock.timers.tick(32_000);
  assert.deepEqual(silent.told, ['failed unreachable 408']);
  assert.equal(silent.transport.sipStatus, 408);
});

test('an answer that crossed our CANCEL: ACKed, hung up (BYE), told as its CANCEL would have been; its dialog and transaction retired (issue 43)', (t) => {
  const { wire, deliver, told, sent, dialogs, invites } = outboundOf(t, 20_000);
  deliver(responseOf(sent, 180, { toTag: 'b' }));
  t.mock.timers.tick(20_000);
  assert.deepEqual(wire.summary, ['INVITE', 'CANCEL']);
  deliver(responseOf(sent, 200, { toTag: 'b', headers: OK_HEADERS, body: ANSWER_SDP }));
  deliver(responseOf(wire.last('CANCEL'), 481, { toTag: 'b' }));
  assert.deepEqual(wire.summary, ['INVITE', 'CANCEL', 'ACK', 'BYE']);
  assert.deepEqual(told, ['failed no_answer 200']);
  deliver(responseOf(wire.last('BYE'), 200, { toTag: 'b' }));
  // Its 2xx again: ACKed again while the transaction is accepted; nothing more told.
  deliver(responseOf(sent, 200, { toTag: 'b', headers: OK_HEADERS, body: ANSWER_SDP }));
  assert.deepEqual(wire.summary, ['INVITE', 'CANCEL', 'ACK', 'BYE', 'ACK']);
  assert.deepEqual(told, ['failed no_answer 200']);
  t.mock.timers.tick(32_000);
  assert.equal(dialogs.size, 0, 'the dialog is retired');
  assert.equal(invites.size, 0, 'the transaction ended (Timer M)');
});

test('an answer with media we cannot use: ACKed, hung up, media_unacceptable; its dialog retired', (t) => {
  const { wire, deliver, told, sent, dialogs, log } = outboundOf(t);
  deliver(responseOf(sent, 200, { toTag: 'b', headers: OK_HEADERS, body: ANSWER_SDP.replace(/RTP\/AVP 0 101/, 'RTP/AVP 18').replace(/a=rtpmap:0 PCMU\/8000\r\na=rtpmap:101 telephone-event\/8000\r\n/, 'a=rtpmap:18 G729/8000\r\n') }));
  assert.deepEqual(wire.summary, ['INVITE', 'ACK', 'BYE']);
  assert.deepEqual(told, ['failed media_unacceptable 200']);
  assert.ok(log.some((line) => /media we cannot use/.test(line)));
  t.mock.timers.tick(32_000);
  assert.equal(dialogs.size, 0);
});
