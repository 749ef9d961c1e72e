import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Conversation, itemText, type MessageItem } from '../../src/session/conversation.ts';

const user = (id: string, text: string): MessageItem => ({ id, type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text }] });
const spoken = (id: string): MessageItem => ({ id, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_audio', transcript: 'one two three four. five six seven eight.' }] });

describe('Conversation', () => {
  test('places items at the end, first (null or root), or after an item, and says what precedes them', () => {
    const c = new Conversation();
    assert.deepEqual(c.add(user('a', 'A')), { ok: true, previousItemId: null });
    assert.deepEqual(c.add(user('b', 'B')), { ok: true, previousItemId: 'a' });
    assert.deepEqual(c.add(user('c', 'C'), 'a'), { ok: true, previousItemId: 'a' });
    assert.deepEqual(c.add(user('d', 'D'), 'root'), { ok: true, previousItemId: null });
    assert.deepEqual(c.items.map((i) => i.id), ['d', 'a', 'c', 'b']);
    assert.equal(c.add(user('a', 'again')).ok, false, 'ids are unique');
    const missing = c.add(user('e', 'E'), 'nope');
    assert.equal(missing.ok, false);
    assert.match(!missing.ok ? missing.message : '', /nope/);
    assert.equal(c.delete('c'), true);
    assert.equal(c.delete('c'), false);
    assert.deepEqual(c.items.map((i) => i.id), ['d', 'a', 'b']);
  });

  test('truncation keeps the words spoken before audio_end_ms, clause by clause and in proportion', () => {
    const c = new Conversation();
    c.add(spoken('r'));
    c.addSpoken('r', 1000, 'one two three four.');
    c.addSpoken('r', 600, 'five six');
    c.addSpoken('r', 400, ''); // the clause goes on in a second chunk: 1000 ms in all
    c.addSpoken('r', 500, 'never heard');
    assert.equal(c.audioMs('r'), 2500);
    const cut = c.truncate('r', 1500);
    assert.deepEqual(cut, { ok: true, transcript: 'one two three four. five' });
    const item = c.get('r') as MessageItem;
    assert.equal(item.status, 'incomplete');
    assert.equal(itemText(item), 'one two three four. five');
  });

  test('truncation refuses what it cannot cut', () => {
    const c = new Conversation();
    c.add(user('u', 'hi'));
    c.add(spoken('r'));
    c.addSpoken('r', 1000, 'one two.');
    assert.equal(c.truncate('u', 10).ok, false, 'not an assistant message');
    assert.equal(c.truncate('x', 10).ok, false, 'no such item');
    assert.equal(c.truncate('r', 5000).ok, false, 'beyond its audio');
    assert.deepEqual(c.truncate('r', 0), { ok: true, transcript: '' });
  });
});
