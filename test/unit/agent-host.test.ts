import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Agent, AgentContext, AgentFactory } from '../../src/agent/types.ts';
import { fakeContext } from '../helpers/agentFakes.ts';
import type { Session } from '../../src/session/session.ts';
import { AgentHost } from '../../src/calls/agentHost.ts';

test("a model another factory runs replaces the agent; the conversation stays; the old agent is closed", () => {
  const f = fakeContext({ model: 'a' });
  let session: Session = f.session;
  const ctx: AgentContext = { ...f.ctx, session: () => session };
  const made: { model: string; ctx: AgentContext; closed: boolean; updates: number }[] = [];
  const factory = (model: string): AgentFactory => ({
    create(c) {
      const rec = { model, ctx: c, closed: false, updates: 0 };
      made.push(rec);
      return { onSessionUpdate: () => void rec.updates++, close: () => void (rec.closed = true) } as unknown as Agent;
    },
  });
  const byModel = new Map([['a', factory('a')], ['a2', undefined], ['b', factory('b')]]);
  byModel.set('a2', byModel.get('a'));
  const host = new AgentHost(ctx, (model) => byModel.get(model)!);
  session = { ...session, model: 'a2' };
  host.sessionChanged();
  assert.equal(made.length, 1, 'the same factory: the same agent follows the session');
  assert.equal(made[0]!.updates, 1);
  session = { ...session, model: 'b' };
  host.sessionChanged();
  assert.equal(made.length, 2);
  assert.equal(made[0]!.closed, true);
  assert.equal(made[1]!.ctx.conversation, f.conversation, 'the new agent answers the same conversation');
});
