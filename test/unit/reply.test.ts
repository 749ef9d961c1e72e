import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { MessageItem } from '../../src/session/conversation.ts';
import { Reply, type ReplySettings } from '../../src/agent/reply.ts';
import { fakeContext, fakeSpeaker, scriptedModel, settle } from '../helpers/agentFakes.ts';

const settings: ReplySettings = { instructions: null, temperature: 0.5, tools: [], toolChoice: 'auto', maxOutputTokens: null, voice: 'Emma', audio: true };

function reply(f: ReturnType<typeof fakeContext>, model: ReturnType<typeof scriptedModel>) {
  return new Reply({ ctx: f.ctx, model, speaker: fakeSpeaker(1000), settings, inConversation: true, timings: {}, onAudio: () => {} });
}

describe('Reply', () => {
  test('a completed reply: its item, its events in order, its turn once played', async () => {
    const f = fakeContext();
    const r = reply(f, scriptedModel([{ type: 'text', delta: 'Hello there. ' }, { type: 'text', delta: 'Bye.' }]));
    r.start();
    const info = await r.done;
    assert.equal(info.status, 'completed');
    assert.ok(info.usage && info.usage.outputTokens > 0, 'usage estimated when the model reports none');
    // Text deltas interleave with speech as the two run concurrently; the rest is in a fixed order.
    const types = f.types();
    assert.ok(types.indexOf('response.text.delta') < types.indexOf('response.audio.started'));
    assert.equal(types.filter((t) => t === 'response.text.delta').length, 2);
    assert.deepEqual(types.filter((t) => t !== 'response.text.delta'), [
      'response.created',
      'item.added',
      'response.output_item.added',
      'response.audio.started',
      'response.text.done',
      'response.audio.done',
      'response.output_item.done',
      'item.done',
      'response.done',
    ]);
    const item = f.conversation.items[0] as MessageItem;
    assert.deepEqual(item.content, [{ type: 'output_audio', transcript: 'Hello there. Bye.' }]);
    assert.equal(f.audio.writtenMs, 2000);
    assert.deepEqual(f.turns, [], 'the turn is stored once it has been heard');
    r.playbackEnded();
    assert.deepEqual(f.turns, [{ role: 'assistant', text: 'Hello there. Bye.' }]);
  });

  test('stopped mid-reply: generation ends, unsent audio goes, the item keeps what was heard', async () => {
    const f = fakeContext();
    let release: () => void = () => {};
    const gate = () => new Promise<void>((r) => (release = r));
    const model = scriptedModel([{ type: 'text', delta: 'one two three four ' }, { type: 'text', delta: 'five six seven eight ' }, { type: 'text', delta: 'never said' }], gate);
    const r = reply(f, model);
    r.start();
    await settle(() => model.requests.length === 1, 'the model asked');
    release();
    await settle(() => f.audio.writtenMs === 1000, 'first clause spoken');
    release();
    await settle(() => f.audio.writtenMs === 2000, 'second clause spoken');
    f.audio.play(1500); // the caller heard 1.5 s; 0.5 s still queued
    const dropped = r.stop('turn_detected');
    assert.equal(dropped, 500);
    const info = await r.done;
    assert.equal(info.status, 'cancelled');
    assert.equal(info.reason, 'turn_detected');
    const item = f.conversation.items[0] as MessageItem;
    assert.equal(item.status, 'incomplete');
    assert.deepEqual(item.content, [{ type: 'output_audio', transcript: 'one two three four five six' }]);
    const truncated = f.events.find((e) => e.type === 'item.truncated');
    assert.deepEqual(truncated, { type: 'item.truncated', itemId: item.id, contentIndex: 0, audioEndMs: 1500 });
    assert.deepEqual(f.turns, [{ role: 'assistant', text: 'one two three four five six' }]);
    release();
    assert.equal(r.generating, false);
  });

  test('tool calls become function_call items with streamed arguments', async () => {
    const f = fakeContext();
    const r = reply(
      f,
      scriptedModel([
        { type: 'tool_call', index: 0, id: 'call_9', name: 'lookup', argumentsDelta: '{"q":' },
        { type: 'tool_call', index: 0, argumentsDelta: '"x"}' },
        { type: 'usage', inputTokens: 7, outputTokens: 3 },
      ]),
    );
    r.start();
    const info = await r.done;
    assert.deepEqual(info.usage, { inputTokens: 7, outputTokens: 3 });
    const call = f.conversation.items[0]!;
    assert.ok(call.type === 'function_call');
    assert.deepEqual([call.callId, call.name, call.arguments, call.status], ['call_9', 'lookup', '{"q":"x"}', 'completed']);
    const done = f.events.find((e) => e.type === 'response.function_call_arguments.done');
    assert.ok(done && done.type === 'response.function_call_arguments.done' && done.arguments === '{"q":"x"}');
    assert.equal(f.events.filter((e) => e.type === 'response.function_call_arguments.delta').length, 2);
  });

  test('a failing model: an error event, a spoken apology, status failed', async () => {
    const f = fakeContext();
    const broken = { name: 'broken', async *reply() { throw new Error('boom'); } };
    const r = new Reply({ ctx: f.ctx, model: broken as never, speaker: fakeSpeaker(), settings, inConversation: true, timings: {}, onAudio: () => {} });
    r.start();
    const info = await r.done;
    assert.equal(info.status, 'failed');
    const failed = f.events.find((e) => e.type === 'stage.failed');
    assert.ok(failed && failed.type === 'stage.failed');
    assert.deepEqual([failed.stage, failed.code, failed.recoverable, failed.cause?.message], ['llm', 'model_error', true, 'boom']);
    assert.match(failed.message, /boom/);
    assert.match((f.conversation.items[0] as MessageItem).content[0]!.type === 'output_audio' ? String((f.conversation.items[0] as MessageItem & { content: [{ transcript: string }] }).content[0].transcript) : '', /Sorry/);
  });
});
