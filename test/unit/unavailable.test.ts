// Which store errors mean "cannot answer now" (503) rather than a bug.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isDatabaseUnavailable, isRedisUnavailable } from '../../src/storage/unavailable.ts';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

test('database outages: network, PostgreSQL shutdown and resource states, SQLite file states', () => {
  for (const err of [
    withCode('ECONNREFUSED'),
    withCode('ECONNRESET'),
    withCode('57P01', 'terminating connection due to administrator command'),
    withCode('57P03', 'the database system is starting up'),
    withCode('08006'),
    withCode('53100', 'could not extend file: No space left on device'),
    withCode('53300', 'too many connections'),
    new Error('Connection terminated unexpectedly'),
    new Error('timeout exceeded when trying to connect'),
    withCode('SQLITE_BUSY'),
    withCode('SQLITE_FULL'),
    withCode('SQLITE_IOERR_WRITE'),
    withCode('SQLITE_READONLY_DBMOVED'),
    withCode('SQLITE_CANTOPEN'),
  ]) {
    assert.equal(isDatabaseUnavailable(err), true, `${(err as { code?: string }).code ?? ''} ${err.message}`);
  }
  for (const err of [withCode('23505', 'duplicate key'), withCode('42P01', 'relation does not exist'), withCode('SQLITE_CONSTRAINT_PRIMARYKEY'), withCode('SQLITE_ERROR'), new Error('x'), 'text']) {
    assert.equal(isDatabaseUnavailable(err), false, String(err));
  }
});

test('Redis outages', () => {
  assert.equal(isRedisUnavailable(new Error('Connection is closed.')), true);
  assert.equal(isRedisUnavailable(withCode('ECONNREFUSED')), true);
  assert.equal(isRedisUnavailable(new Error('Reached the max retries per request limit (which is 2).')), true);
  assert.equal(isRedisUnavailable(new Error('Command timed out')), true, 'a Redis that does not answer in time');
  assert.equal(isRedisUnavailable(new Error('ERR wrong number of arguments')), false);
});
