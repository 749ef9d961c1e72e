// The bounded scan of a large client message (src/calls/protocol/messageScan.ts) and what
// readClientMessage makes of it: a message over 64 KiB is never parsed whole unless its structure is
// small, and a bomb is refused near its start.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_LARGE_MESSAGE_VALUES, MAX_MESSAGE_BYTES, MAX_MESSAGE_DEPTH, readClientMessage } from '../../src/calls/protocol/message.ts';
import { scanMessage, stringField, type TopValue } from '../../src/calls/protocol/messageScan.ts';

const LIMITS = { maxValues: MAX_LARGE_MESSAGE_VALUES, maxDepth: MAX_MESSAGE_DEPTH };
const LARGE = new Set(['input_audio_buffer.append', 'conversation.item.create']);
const AUDIO = 'QUJD'.repeat(64 * 1024); // 256 KiB of base64

test('the scan reads the top level of valid objects as JSON.parse does (strings, escapes, literals, nesting)', () => {
  const samples: Record<string, unknown>[] = [
    { type: 'input_audio_buffer.append', event_id: 'evt_1', audio: AUDIO },
    { audio: AUDIO, type: 'input_audio_buffer.append' },
    { a: 'quote " and backslash \\ and \\" and newline \n and unicode \u00e9 \ud83d\ude00', b: '\\', c: '"', d: '' },
    { n: -12.5e3, t: true, f: false, z: null, o: { x: [1, { y: 'z' }] }, e: [], eo: {} },
    {},
  ];
  for (const sample of samples) {
    for (const text of [JSON.stringify(sample), JSON.stringify(sample, null, 2)]) {
      const scan = scanMessage(text, LIMITS);
      assert.equal(scan.ok, true, text.slice(0, 80));
      assert.deepEqual([...scan.fields.keys()], Object.keys(sample));
      for (const [key, value] of Object.entries(sample)) {
        const field: TopValue | undefined = scan.fields.get(key);
        if (typeof value === 'string') assert.equal(stringField(text, scan.fields, key), value);
        else if (value !== null && typeof value === 'object') assert.equal(field?.kind, 'nested');
        else assert.deepEqual(field, { kind: 'literal', text: JSON.stringify(value) });
      }
    }
  }
});

test('the scan refuses what is not one JSON object', () => {
  for (const [text, problem] of [
    ['[1]', 'not_object'],
    ['"x"', 'not_object'],
    ['12', 'not_object'],
    ['<nope>', 'invalid_json'],
    ['{"a":1', 'invalid_json'],
    ['{"a":"x}', 'invalid_json'],
    ['{"a":"x\\"}', 'invalid_json'],
    ['{"a" 1}', 'invalid_json'],
    ['{"a":1,}', 'invalid_json'],
    ['{"a":tru}', 'invalid_json'],
    ['{"a":1} {}', 'invalid_json'],
    ['{"a":[1 2]}', 'invalid_json'],
  ] as const) {
    const scan = scanMessage(text, LIMITS);
    assert.equal(scan.ok, false, text);
    assert.equal(!scan.ok && scan.problem, problem, text);
  }
});

test('a bomb is refused near its start: 5 M empty arrays at the value bound, 7.5 M levels at the depth bound', () => {
  const arrays = `{"type":"input_audio_buffer.append","audio":[${'[],'.repeat(5_000_000)}[]]}`;
  const many = scanMessage(arrays, LIMITS);
  assert.equal(!many.ok && many.problem, 'too_many_values');
  // It stopped after MAX_LARGE_MESSAGE_VALUES values of 3 characters, not at the text's end (15 MB).
  assert.ok(!many.ok && many.at < 4 * MAX_LARGE_MESSAGE_VALUES, `stopped at ${!many.ok && many.at}`);
  // What it read before (the type) is kept for the error.
  assert.equal(stringField(arrays, many.fields, 'type'), 'input_audio_buffer.append');

  const deep = `{"event_id":"evt_deep","type":"session.update","session":${'['.repeat(7_500_000)}${']'.repeat(7_500_000)}}`;
  const nested = scanMessage(deep, LIMITS);
  assert.equal(!nested.ok && nested.problem, 'too_deep');
  assert.ok(!nested.ok && nested.at < 100 + MAX_MESSAGE_DEPTH, `stopped at ${!nested.ok && nested.at}`);
  assert.equal(stringField(deep, nested.fields, 'event_id'), 'evt_deep');

  // A bare array of them: refused at its first character.
  const bare = `[${'[],'.repeat(5_000_000)}[]]`;
  const top = scanMessage(bare, LIMITS);
  assert.equal(!top.ok && top.problem, 'not_object');
  assert.equal(!top.ok && top.at, 0);
});

test('a message over 64 KiB: another type refused unparsed, an append read off the scan, an item with an image parsed', () => {
  // The same as JSON.parse, for an append, without parsing it.
  const append = { event_id: 'evt_a', type: 'input_audio_buffer.append', audio: AUDIO };
  assert.deepEqual(readClientMessage(JSON.stringify(append), 16 * 1024 * 1024, LARGE), { ok: true, message: append });

  // Any other type: message_too_large, with its event_id, however the rest is built.
  const update = `{"event_id":"evt_u","type":"session.update","session":{"instructions":"${'x'.repeat(MAX_MESSAGE_BYTES)}"}}`;
  assert.deepEqual(readClientMessage(update, 16 * 1024 * 1024, LARGE), {
    ok: false,
    code: 'message_too_large',
    message: `Only input_audio_buffer.append and conversation.item.create may be larger than ${MAX_MESSAGE_BYTES} bytes, not session.update.`,
    eventId: 'evt_u',
  });
  const updateBomb = `{"type":"session.update","event_id":"evt_b","session":[${'[],'.repeat(5_000_000)}[]]}`;
  const refused = readClientMessage(updateBomb, 16 * 1024 * 1024, LARGE);
  assert.equal(!refused.ok && refused.code, 'message_too_large');
  assert.equal(!refused.ok && refused.eventId, 'evt_b');
  // Where no type may be large (Orga's protocol): refused for its size alone.
  assert.equal((readClientMessage(JSON.stringify(append), 16 * 1024 * 1024) as { code: string }).code, 'message_too_large');
  // Without a type it cannot be one that may be large.
  assert.equal((readClientMessage(JSON.stringify({ audio: AUDIO }), 16 * 1024 * 1024, LARGE) as { code: string }).code, 'message_too_large');

  // An append: nothing nested, no bombs.
  const nestedAppend = readClientMessage(JSON.stringify({ ...append, extra: { a: 1 } }), 16 * 1024 * 1024, LARGE);
  assert.equal(!nestedAppend.ok && nestedAppend.code, 'invalid_event');
  assert.equal(!nestedAppend.ok && nestedAppend.eventId, 'evt_a');
  for (const bomb of [
    `{"type":"input_audio_buffer.append","audio":[${'[],'.repeat(5_000_000)}[]]}`,
    `{"type":"input_audio_buffer.append","audio":${'['.repeat(7_500_000)}${']'.repeat(7_500_000)}}`,
    `[${'[],'.repeat(5_000_000)}[]]`,
    `{"type":"conversation.item.create","item":{"content":[${'{},'.repeat(5_000_000)}{}]}}`,
  ]) {
    const reading = readClientMessage(bomb, 16 * 1024 * 1024, LARGE);
    assert.equal(!reading.ok && reading.code, 'invalid_event', bomb.slice(0, 60));
  }

  // An item (its structure small): parsed, and what may be large in it checked by the protocol.
  const item = { type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_image', image_url: `data:image/png;base64,${AUDIO}` }] } };
  assert.deepEqual(readClientMessage(JSON.stringify(item), 16 * 1024 * 1024, LARGE), { ok: true, message: item });
});
