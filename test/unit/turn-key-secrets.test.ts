// The per-key TURN secrets in coturn's user database: a row outlives every credential signed with
// it (a credential may be minted up to half a life after the row's last write), and goes after.
import assert from 'node:assert/strict';
import { SQLite as Database } from '../../src/storage/sqliteDriver.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { TurnKeySecrets } from '../../src/ice/turnKeySecrets.ts';

const TTL_S = 600;

test("a key's row lives as long as the last credential signed with it, then goes", () => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-turn-keys-'));
  const file = join(dir, 'turndb');
  // coturn's own table (coturn creates it when it starts).
  new Database(file).exec("CREATE TABLE turn_secret (realm varchar(127) default '', value varchar(256), primary key (realm,value))").close();
  const secrets = new TurnKeySecrets(file, 'master-secret', 'parley', TTL_S);
  const rows = () => (new Database(file, { readonly: true }).prepare('SELECT count(*) AS n FROM turn_secret').get() as { n: number }).n;
  try {
    const t0 = Date.now();
    const secret = secrets.grant('key_a', t0);
    // Minted just before a rewrite is due: no write, and this credential lives until t0 + 1.4 TTL.
    assert.equal(secrets.grant('key_a', t0 + 0.4 * TTL_S * 1000), secret);
    assert.deepEqual(secrets.keys(t0 + 1.3 * TTL_S * 1000), ['key_a'], 'still signing a live credential');
    assert.equal(rows(), 1);
    assert.deepEqual(secrets.keys(t0 + 1.6 * TTL_S * 1000), [], 'every credential it signed has expired');
    assert.equal(rows(), 0);
  } finally {
    secrets.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
