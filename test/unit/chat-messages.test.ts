import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Item } from '../../src/session/conversation.ts';
import { lastUserText, toChatMessages } from '../../src/agent/llm/messages.ts';

test("a conversation's items as chat messages: transcripts stand for audio, a reply's tool calls ride on one assistant message", () => {
  const items: Item[] = [
    { id: 'a', type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_audio', transcript: 'what time is it' }] },
    { id: 'b', type: 'function_call', status: 'completed', callId: 'c1', name: 'time', arguments: '{}' },
    { id: 'c', type: 'function_call', status: 'completed', callId: 'c2', name: 'zone', arguments: '{}' },
    { id: 'd', type: 'function_call_output', status: 'completed', callId: 'c1', output: 'noon' },
    { id: 'e', type: 'message', role: 'assistant', status: 'incomplete', content: [{ type: 'output_audio', transcript: 'It is' }] },
    { id: 'f', type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_audio', transcript: null }] },
  ];
  assert.deepEqual(toChatMessages(items), [
    { role: 'user', content: 'what time is it' },
    { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'time', arguments: '{}' }, { id: 'c2', name: 'zone', arguments: '{}' }] },
    { role: 'tool', toolCallId: 'c1', content: 'noon' },
    { role: 'assistant', content: 'It is' },
  ]);
  assert.equal(lastUserText(toChatMessages(items)), 'what time is it');
});
