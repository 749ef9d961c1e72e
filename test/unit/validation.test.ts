// JSON nesting limit (pydantic's recursion limit) as a pure function.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jsonDepthOverflow, jsonTooDeep } from '../../src/session/validation.ts';

test('jsonDepthOverflow finds the first bracket beyond the limit, ignoring brackets in strings', () => {
  assert.equal(jsonDepthOverflow('{"a":[1,{"b":2}]}', 3), -1);
  assert.equal(jsonDepthOverflow('{"a":[1,{"b":2}]}', 2), 8);
  assert.equal(jsonDepthOverflow('[[[[]]]]', 4), -1);
  assert.equal(jsonDepthOverflow('[[[[[]]]]]', 4), 4);
  assert.equal(jsonDepthOverflow('{"s":"[[[[[[\\"[[[["}', 1), -1, 'brackets and escaped quotes inside strings do not count');
  assert.equal(jsonDepthOverflow('[]'.repeat(100_000), 1), -1, 'breadth is not depth');
  assert.equal(jsonDepthOverflow('['.repeat(100_000), 32), 32);
});

test('jsonTooDeep is pydantic-shaped', () => {
  assert.deepEqual(jsonTooDeep(40), { type: 'json_invalid', loc: ['body', 40], msg: 'JSON decode error', input: {}, ctx: { error: 'recursion limit exceeded' } });
});
