// The door contract (src/calls/door.ts): openCall answers the caller's own limits before the node's
// room, offers a call the node has no room for to another node, takes it all the same past a
// default load threshold when no other node does, and refuses it past the operator's.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Admission, CallCapacityExceeded, type AdmissionLimits, type AdmitOptions } from '../../src/calls/admission.ts';
import type { CallManager, CallRequest } from '../../src/calls/callManager.ts';
import { openCall, type DoorRequest } from '../../src/calls/door.ts';
import type { PendingTransport } from '../../src/calls/transport.ts';

const LIMITS: AdmissionLimits = { maxCalls: 10, maxHalfOpen: 0, maxCallsPerKey: 1, maxHalfOpenPerKey: 0, maxCallsPerToken: 0, ownHalfOpen: {} };

/** The call manager's admission and transport, without a call: enough for the door's order. */
function manager(admission: Admission, draining = false): { calls: CallManager; opened: string[] } {
  const opened: string[] = [];
  let n = 0;
  const create = async (req: CallRequest, open: (id: string) => PendingTransport<string> | Promise<PendingTransport<string>>, admit: AdmitOptions) => {
    if (draining) throw new CallCapacityExceeded('The server is shutting down; try another node.', 'draining');
    await admission.admitAcrossNodes(req, admit);
    const id = `conv_${++n}`;
    opened.push(id);
    const accepted = await (await open(id)).accept();
    return { accepted, call: { id } };
  };
  // Every model allowed and available (the model's refusals are test/models.test.ts's).
  const models = { allows: () => true, choose: () => ({}) };
  return { calls: { create, models } as unknown as CallManager, opened };
}

const door = (apiKeyId: string, elsewhere?: () => Promise<string | undefined>): DoorRequest<string, string> => ({
  request: { apiKeyId, tokenId: `tok_${apiKeyId}`, endUser: null, session: { model: 'audio-echo' } as CallRequest['session'] },
  open: () => ({ transport: {} as PendingTransport<string>['transport'], accept: async () => 'answer' }),
  ...(elsewhere ? { elsewhere } : {}),
});

test('a node with room opens the call; the transport is made only once the call is admitted', async () => {
  const { calls, opened } = manager(new Admission(LIMITS));
  const result = await openCall(calls, door('key_a', async () => assert.fail('not placed elsewhere')));
  assert.ok(result.ok);
  assert.equal(result.accepted, 'answer');
  assert.deepEqual(opened, ['conv_1']);
});

test('a caller at its own limit is refused (limited), never offered to another node', async () => {
  const { calls } = manager(new Admission(LIMITS));
  await openCall(calls, door('key_a'));
  const result = await openCall(calls, door('key_a', async () => assert.fail('not placed elsewhere')));
  assert.deepEqual(result, { ok: false, refusal: { kind: 'limited', message: result.ok ? '' : result.refusal.message, limit: 'calls-key' } });
});

test('a full node offers the call elsewhere: the taker is handed on, else full', async () => {
  const { calls } = manager(new Admission({ ...LIMITS, maxCalls: 0 }));
  assert.deepEqual(await openCall(calls, door('key_a', async () => 'node-b')), {
    ok: false,
    refusal: { kind: 'full', message: 'This server is at its limit of concurrent calls; retry shortly.', placed: 'node-b' },
  });
  const alone = await openCall(calls, door('key_a', async () => undefined));
  assert.equal(alone.ok ? undefined : alone.refusal.kind, 'full');
});

test('past the default load threshold a node takes the call no other node took; past the operator\'s it refuses', async () => {
  const loaded = () => 'This server is loaded (0.91, past the default threshold 0.75); retry shortly or on another node.';
  let offered = 0;
  const elsewhere = async () => void offered++;
  const lenient = manager(new Admission({ ...LIMITS, loadRefusesAlone: false }, () => {}, loaded));
  const taken = await openCall(lenient.calls, door('key_a', elsewhere));
  assert.ok(taken.ok, 'taken alone');
  assert.equal(offered, 1, 'offered to the other nodes first');
  const strict = manager(new Admission({ ...LIMITS, loadRefusesAlone: true }, () => {}, loaded));
  const refused = await openCall(strict.calls, door('key_a', elsewhere));
  assert.equal(refused.ok ? undefined : refused.refusal.kind, 'loaded');
  assert.deepEqual(strict.opened, []);
});

test('a draining node is not offered to other nodes: draining', async () => {
  const { calls } = manager(new Admission(LIMITS), true);
  const result = await openCall(calls, door('key_a', async () => assert.fail('not placed elsewhere')));
  assert.equal(result.ok ? undefined : result.refusal.kind, 'draining');
});

test("a loaded node asks the key's calls across the nodes before saying it is loaded: limited first", async () => {
  const across = { set: () => {}, total: async () => 1, start: async () => {}, close: async () => {} };
  const { calls } = manager(new Admission(LIMITS, () => {}, () => 'This server is loaded (0.91, its threshold LOAD_THRESHOLD is 0.75).', across as never));
  const result = await openCall(calls, door('key_a', async () => assert.fail('not placed elsewhere')));
  assert.equal(result.ok ? undefined : result.refusal.kind, 'limited');
  assert.match(result.ok ? '' : result.refusal.message, /across the cluster/);
});
