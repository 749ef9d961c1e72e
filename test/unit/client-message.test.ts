import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jsonDepth, MAX_AUDIO_MESSAGE_BYTES, MAX_MESSAGE_BYTES, MAX_MESSAGE_DEPTH, readClientMessage } from '../../src/calls/protocol/message.ts';
import { openAiProtocol } from '../../src/calls/protocol/openai.ts';
import type { CallControl } from '../../src/calls/protocol/types.ts';
import type { SessionDefaults } from '../../src/session/session.ts';

test('client messages: size, JSON, object and depth are checked before any schema', () => {
  assert.deepEqual(readClientMessage('{"type":"x"}'), { ok: true, message: { type: 'x' } });
  assert.equal((readClientMessage('x'.repeat(MAX_MESSAGE_BYTES + 1)) as { code: string }).code, 'message_too_large');
  assert.equal((readClientMessage('{nope') as { code: string }).code, 'invalid_json');
  assert.equal((readClientMessage('[1]') as { code: string }).code, 'invalid_event');
  assert.equal((readClientMessage('null') as { code: string }).code, 'invalid_event');
  const deep = `{"type":"session.update","session":${'['.repeat(5000)}${']'.repeat(5000)}}`;
  assert.equal((readClientMessage(deep) as { code: string }).code, 'invalid_event');
  const fine = `{"a":${'['.repeat(MAX_MESSAGE_DEPTH - 2)}${']'.repeat(MAX_MESSAGE_DEPTH - 2)}}`;
  assert.equal(readClientMessage(fine).ok, true);
});

test('jsonDepth counts nesting without recursion and stops at the limit', () => {
  assert.equal(jsonDepth(1), 0);
  assert.equal(jsonDepth({}), 1);
  assert.equal(jsonDepth({ a: [{ b: 1 }] }), 3);
  let v: unknown = 0;
  for (let i = 0; i < 100_000; i++) v = [v];
  assert.equal(jsonDepth(v, 40), 41);
});

test('where audio travels in messages, an append (or an item with audio) may be as large as OpenAI takes (15 MiB), any other event 64 KiB', () => {
  const control = { audioInEvents: true, appendInputAudio: () => true } as unknown as CallControl;
  const sent: { type: string; error?: { code: string } }[] = [];
  const protocol = openAiProtocol({ turnDetection: null } as unknown as SessionDefaults)(control, (m) => sent.push(m as (typeof sent)[number]));
  const codes = () => sent.filter((m) => m.type === 'error').map((m) => m.error!.code);
  protocol.receive(JSON.stringify({ type: 'input_audio_buffer.append', audio: 'A'.repeat(15 * 1024 * 1024) }));
  assert.deepEqual(codes(), []);
  protocol.receive(JSON.stringify({ type: 'input_audio_buffer.append', audio: 'A'.repeat(MAX_AUDIO_MESSAGE_BYTES) }));
  protocol.receive(JSON.stringify({ type: 'session.update', session: { instructions: 'x'.repeat(MAX_MESSAGE_BYTES) } }));
  assert.deepEqual(codes(), ['message_too_large', 'message_too_large']);
});
