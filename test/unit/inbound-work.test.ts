// A WebSocket's messages wait their turn: at most BYTES_PER_TURN handled a turn of the event loop,
// in order, the work a message leaves for later before the messages after it, the socket paused
// while much waits and read again once half is handled; nothing is handled after the socket closed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BYTES_PER_TURN, InboundWork, PAUSE_AT_BYTES } from '../../src/calls/websocket/inboundWork.ts';

const nextTurn = () => new Promise((r) => setImmediate(r));

function socket() {
  const flow: string[] = [];
  return { flow, pause: () => flow.push('pause'), resume: () => flow.push('resume') };
}

test('at most the budget a turn, in order; the rest on the next turns', async () => {
  const work = new InboundWork(socket());
  const done: number[] = [];
  const size = BYTES_PER_TURN / 4;
  for (let i = 0; i < 10; i++) work.add(size, () => done.push(i));
  assert.deepEqual(done, [0, 1, 2, 3], 'the first turn: its budget');
  await nextTurn();
  assert.deepEqual(done, [0, 1, 2, 3, 4, 5, 6, 7]);
  await nextTurn();
  assert.deepEqual(done, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
});

test('tiny messages count at least 1 KiB each', () => {
  const work = new InboundWork(socket());
  let done = 0;
  for (let i = 0; i < 1000; i++) work.add(10, () => done++);
  assert.equal(done, BYTES_PER_TURN / 1024);
});

test('work a message leaves for later comes before the messages after it', async () => {
  const work = new InboundWork(socket());
  const done: string[] = [];
  work.add(BYTES_PER_TURN, () => {
    done.push('append');
    work.next([1, 2, 3].map((n) => ({ bytes: BYTES_PER_TURN / 2, run: () => done.push(`piece ${n}`) })));
  });
  work.add(10, () => done.push('commit'));
  assert.deepEqual(done, ['append']);
  for (let i = 0; i < 3; i++) await nextTurn();
  assert.deepEqual(done, ['append', 'piece 1', 'piece 2', 'piece 3', 'commit']);
});

test('the socket is paused while more than PAUSE_AT_BYTES wait, read again once half is handled', async () => {
  const s = socket();
  const work = new InboundWork(s);
  for (let i = 0; i < 12; i++) work.add(PAUSE_AT_BYTES / 8, () => {});
  assert.deepEqual(s.flow, ['pause']);
  while (s.flow.length < 2) await nextTurn();
  assert.deepEqual(s.flow, ['pause', 'resume']);
});

test('nothing is handled after the socket closed', async () => {
  const work = new InboundWork(socket());
  let done = 0;
  for (let i = 0; i < 10; i++) work.add(BYTES_PER_TURN / 2, () => done++);
  work.close();
  work.add(10, () => done++);
  await nextTurn();
  await nextTurn();
  assert.equal(done, 2);
});
