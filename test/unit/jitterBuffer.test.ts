// The inbound reordering buffer: releases in sequence order, waits at most `depth` packets for a
// missing one, then declares it lost; late and duplicate packets are dropped; 16-bit wrap-around.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { JitterBuffer, type Release } from '../../src/media/jitterBuffer.ts';

const show = (rs: Release<string>[]) => rs.map((r) => (r.lost ? `lost ${r.seq & 0xffff}` : r.value));

test('in-order packets are released at once', () => {
  const jb = new JitterBuffer<string>(3);
  assert.deepEqual(show(jb.push(10, 'a')), ['a']);
  assert.deepEqual(show(jb.push(11, 'b')), ['b']);
  assert.equal(jb.lost, 0);
});

test('a packet overtaken by the next ones is waited for and released in order', () => {
  const jb = new JitterBuffer<string>(3);
  jb.push(10, 'a');
  assert.deepEqual(show(jb.push(12, 'c')), []);
  assert.deepEqual(show(jb.push(13, 'd')), []);
  assert.deepEqual(show(jb.push(11, 'b')), ['b', 'c', 'd']);
  assert.equal(jb.lost, 0);
});

test('a packet still missing once more than `depth` packets wait behind it is declared lost', () => {
  const jb = new JitterBuffer<string>(3);
  jb.push(10, 'a');
  assert.deepEqual(show(jb.push(12, 'c')), []);
  assert.deepEqual(show(jb.push(13, 'd')), []);
  assert.deepEqual(show(jb.push(14, 'e')), []);
  assert.deepEqual(show(jb.push(15, 'f')), ['lost 11', 'c', 'd', 'e', 'f']);
  assert.equal(jb.lost, 1);
  assert.deepEqual(show(jb.push(11, 'b')), [], 'it arrives too late');
  assert.equal(jb.late, 1);
});

test('duplicates are dropped', () => {
  const jb = new JitterBuffer<string>(3);
  jb.push(10, 'a');
  jb.push(12, 'c');
  assert.deepEqual(show(jb.push(12, 'c again')), []);
  assert.equal(jb.duplicates, 1);
});

test('sequence numbers wrap from 65535 to 0 without a loss', () => {
  const jb = new JitterBuffer<string>(3);
  const out = [65533, 65534, 65535, 0, 1].flatMap((s) => show(jb.push(s, String(s))));
  assert.deepEqual(out, ['65533', '65534', '65535', '0', '1']);
  assert.equal(jb.lost, 0);
  assert.equal(jb.highestSeq & 0xffff, 1);
});

test('a jump of more than 50 (a restarted stream) skips ahead at once instead of counting losses', () => {
  const jb = new JitterBuffer<string>(3);
  jb.push(100, 'a');
  const out = [1000, 1001, 1002, 1003].flatMap((s) => show(jb.push(s, String(s))));
  assert.deepEqual(out, ['1000', '1001', '1002', '1003']);
  assert.equal(jb.lost, 0);
});
