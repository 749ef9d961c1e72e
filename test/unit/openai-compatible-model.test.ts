import assert from 'node:assert/strict';
import { test } from 'node:test';
import { chunksOf, requestBody } from '../../src/agent/llm/openaiCompatible.ts';

test('the request carries instructions, the conversation with tool calls and results, tools and tool_choice', () => {
  const body = requestBody('m', {
    messages: [
      { role: 'user', content: 'time?' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'call_1', name: 'get_time', arguments: '{}' }] },
      { role: 'tool', toolCallId: 'call_1', content: 'noon' },
    ],
    instructions: 'Be brief.',
    temperature: 0.4,
    tools: [{ name: 'get_time', description: 'Time' }],
    toolChoice: { name: 'get_time' },
    maxOutputTokens: 50,
    signal: new AbortController().signal,
  });
  assert.deepEqual(body.messages, [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'time?' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_time', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: 'noon' },
  ]);
  assert.deepEqual(body.tools, [{ type: 'function', function: { name: 'get_time', description: 'Time', parameters: { type: 'object', properties: {} } } }]);
  assert.deepEqual(body.tool_choice, { type: 'function', function: { name: 'get_time' } });
  assert.equal(body.max_tokens, 50);
  const plain = requestBody('m', { messages: [], instructions: null, temperature: 1, tools: [], toolChoice: 'auto', signal: new AbortController().signal });
  assert.ok(!('tools' in plain) && !('tool_choice' in plain), 'no tools: no tool fields');
});

test('stream chunks become text, tool-call pieces and usage', () => {
  assert.deepEqual(chunksOf({ choices: [{ delta: { content: 'Hi' } }] }), [{ type: 'text', delta: 'Hi' }]);
  assert.deepEqual(chunksOf({ choices: [{ delta: { tool_calls: [{ index: 0, id: 'call_1', function: { name: 'f', arguments: '{"a"' } }] } }] }), [
    { type: 'tool_call', index: 0, id: 'call_1', name: 'f', argumentsDelta: '{"a"' },
  ]);
  assert.deepEqual(chunksOf({ choices: [], usage: { prompt_tokens: 12, completion_tokens: 3 } }), [{ type: 'usage', inputTokens: 12, outputTokens: 3 }]);
});
