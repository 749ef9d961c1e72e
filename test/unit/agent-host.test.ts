import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Agent, AgentContext, AgentFactory } from '../../src/agent/types.ts';
import { ModelRouter } from '../../src/agent/modelRouter.ts';
import { parseModelFile } from '../../src/config/models.ts';
import { fakeContext } from '../helpers/agentFakes.ts';
import type { Session } from '../../src/session/session.ts';
import { AgentHost } from '../../src/calls/agentHost.ts';

const CATALOGUE = parseModelFile(
  `
default: up
models:
  - { id: up, kind: realtime, url: "ws://127.0.0.1:9/v1/realtime", fallback: [cascade], aliases: [up-alias] }
  - { id: cascade, kind: cascade, llm: { url: "http://127.0.0.1:9/v1" }, fallback: [parley-offline] }
  - { id: other, kind: offline }
`,
  'models.yaml',
);

interface Made {
  model: string;
  ctx: AgentContext;
  closed: boolean;
  updates: number;
}

function harness(opts: { failures?: number } = {}) {
  const f = fakeContext({ model: 'up' });
  let session: Session = f.session;
  const made: Made[] = [];
  const factories = new Map<string, AgentFactory>();
  const factoryOf = (id: string): AgentFactory => {
    if (!factories.has(id)) {
      factories.set(id, {
        create(c) {
          const rec = { model: id, ctx: c, closed: false, updates: 0 };
          made.push(rec);
          return { onSessionUpdate: () => void rec.updates++, close: () => void (rec.closed = true) } as unknown as Agent;
        },
      });
    }
    return factories.get(id)!;
  };
  let now = 0;
  const router = new ModelRouter(CATALOGUE, (e) => factoryOf(e.id), { failures: opts.failures ?? 3, cooldownMs: 30_000 }, undefined, () => now);
  const ended: string[] = [];
  const host = new AgentHost({ ...f.ctx, session: () => session }, router, () => {}, (reason) => ended.push(reason));
  return { f, made, router, host, ended, setSession: (s: Partial<Session>) => void (session = { ...session, ...s }), advance: (ms: number) => void (now += ms) };
}

test('a model another factory runs replaces the agent; an alias of the same model keeps it; the conversation stays', () => {
  const h = harness();
  h.setSession({ model: 'up-alias' });
  h.host.sessionChanged();
  assert.equal(h.made.length, 1, 'an alias of the same model: the same agent follows the session');
  assert.equal(h.made[0]!.updates, 1);
  h.setSession({ model: 'other' });
  h.host.sessionChanged();
  assert.equal(h.made.length, 2);
  assert.equal(h.made[0]!.closed, true);
  assert.equal(h.host.model, 'other');
  assert.equal(h.made[1]!.ctx.conversation, h.f.conversation, 'the new agent answers the same conversation');
});

test('a failed model hands the call to its fallback with one error event, then to the fallback of the fallback, then ends the call', () => {
  const h = harness();
  h.made[0]!.ctx.modelFailed({ code: 'model_failed', message: 'The upstream refused the key.' });
  assert.equal(h.host.model, 'cascade');
  assert.equal(h.made[0]!.closed, true);
  const errors = h.f.events.filter((e) => e.type === 'error');
  assert.equal(errors.length, 1);
  assert.match((errors[0] as { message: string }).message, /upstream refused the key\. The call goes on with cascade\./);
  // The same agent failing twice counts once.
  h.made[0]!.ctx.modelFailed({ code: 'model_failed', message: 'again' });
  assert.equal(h.f.events.filter((e) => e.type === 'error').length, 1);
  h.made[1]!.ctx.modelFailed({ code: 'model_timeout', message: 'No answer.' });
  assert.equal(h.host.model, 'parley-offline');
  assert.deepEqual(h.ended, []);
  h.made[2]!.ctx.modelFailed({ code: 'model_failed', message: 'Gone.' });
  assert.deepEqual(h.ended, ['model_unavailable']);
});

test('after a fallback, a session.update naming the same model keeps the fallback rather than going back to the failed model', () => {
  const h = harness();
  h.made[0]!.ctx.modelFailed({ code: 'model_failed', message: 'x' });
  h.setSession({ instructions: 'Be brief.' });
  h.host.sessionChanged();
  assert.equal(h.host.model, 'cascade');
  assert.equal(h.made.length, 2);
  assert.equal(h.made[1]!.updates, 1);
});

test('the breaker: after N failures within the cooldown new calls start on the fallback, and after the cooldown on the model again', () => {
  const h = harness({ failures: 2 });
  h.router.failed('up', 'model_failed');
  assert.equal(h.router.choose('up')!.id, 'up', 'one failure: still offered');
  h.advance(1000);
  h.router.failed('up', 'model_failed');
  assert.equal(h.router.choose('up')!.id, 'cascade', 'breaker open: the fallback takes new calls');
  assert.equal(h.router.health().up!.state, 'degraded');
  h.advance(30_001);
  assert.equal(h.router.choose('up')!.id, 'up');
  assert.equal(h.router.health().up!.state, 'ready');
});

test('keys: a model limited to some keys is listed and allowed for those only; unknown names run the default', () => {
  const catalogue = parseModelFile(`models:\n  - { id: cheap, kind: offline }\n  - { id: costly, kind: realtime, url: "wss://api.example.com/v1/realtime", keys: [key_a] }\n`, 'm.yaml');
  const router = new ModelRouter(catalogue, () => ({ create: () => ({}) as Agent }), { failures: 3, cooldownMs: 1000 });
  assert.equal(router.allows('costly', 'key_a'), true);
  assert.equal(router.allows('costly', 'key_b'), false);
  assert.deepEqual(router.listFor('key_b').map((e) => e.id), ['cheap', 'parley-offline', 'echo', 'audio-echo']);
  assert.equal(router.entryFor('gpt-4o-realtime-preview').id, 'cheap');
  assert.equal(router.entryFor('orga-1-beta').id, 'cheap');
});
