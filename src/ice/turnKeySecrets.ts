// TURN secrets per API key, for the coturn Parley runs. coturn (use-auth-secret) accepts a REST
// credential signed with any secret of its realm, and reads its SQLite user database's turn_secret
// table on every request: so each key's credentials are signed with a secret of that key's own
// (derived from the TURN secret), written there when ice-config first mints one, and deleted when
// the key is revoked — from then on coturn refuses them, new allocations and refreshes alike, while
// every other key's go on. A row whose credentials have all expired is deleted too.
import { SQLite, type SQLiteDatabase } from '../storage/sqliteDriver.js';
import { createHmac } from 'node:crypto';

/** A key's row is written again once this share of a credential's life has passed since its last write. */
const REWRITE_AFTER = 0.5;

export class TurnKeySecrets {
  private db: SQLiteDatabase | undefined;
  /** Which keys have a secret in coturn's table, and since when: a file of Parley's own beside it. */
  private ledger: SQLiteDatabase | undefined;
  /** Keys whose row is written, and when (ms): no write per ice-config request. */
  private readonly granted = new Map<string, number>();

  constructor(
    /** coturn's user database (its `userdb` file); Parley's ledger is `<file>.keys` beside it. */
    private readonly file: string,
    /** The TURN secret the keys' secrets derive from. */
    private readonly master: string,
    private readonly realm: string,
    /** The longest a credential lives: rows older than that sign nothing still valid. */
    private readonly maxCredentialSeconds: number,
  ) {}

  /** The secret `apiKeyId`'s credentials are signed with, accepted by coturn from now on. */
  grant(apiKeyId: string, now = Date.now()): string {
    const secret = this.secretOf(apiKeyId);
    const at = this.granted.get(apiKeyId);
    // Written again now and then, so the row outlives the credentials signed with it.
    if (at === undefined || now - at > this.maxCredentialSeconds * 1000 * REWRITE_AFTER) {
      const { db, ledger } = this.open();
      db.prepare('INSERT OR IGNORE INTO turn_secret (realm, value) VALUES (?, ?)').run(this.realm, secret);
      ledger.prepare('INSERT INTO parley_turn_key (key_id, value, granted_at) VALUES (?, ?, ?) ON CONFLICT (key_id) DO UPDATE SET granted_at = excluded.granted_at').run(apiKeyId, secret, now);
      this.granted.set(apiKeyId, now);
    }
    return secret;
  }

  /** coturn stops accepting the key's credentials (its allocations can no longer be refreshed). */
  revoke(apiKeyId: string): void {
    const { db, ledger } = this.open();
    db.prepare('DELETE FROM turn_secret WHERE realm = ? AND value = ?').run(this.realm, this.secretOf(apiKeyId));
    ledger.prepare('DELETE FROM parley_turn_key WHERE key_id = ?').run(apiKeyId);
    this.granted.delete(apiKeyId);
  }

  /**
   * The keys coturn holds a secret of (for the revocation poll); rows past every credential's life are
   * dropped first. A credential signed with a row may be minted up to REWRITE_AFTER of a life after the
   * row's last write (it is not rewritten sooner) and lives a whole life from then: the row must too.
   */
  keys(now = Date.now()): string[] {
    const { ledger } = this.open();
    const expired = ledger.prepare('SELECT key_id FROM parley_turn_key WHERE granted_at < ?').all(now - this.maxCredentialSeconds * 1000 * (1 + REWRITE_AFTER)) as { key_id: string }[];
    for (const { key_id } of expired) this.revoke(key_id);
    return (ledger.prepare('SELECT key_id FROM parley_turn_key').all() as { key_id: string }[]).map((r) => r.key_id);
  }

  close(): void {
    this.db?.close();
    this.ledger?.close();
    this.db = this.ledger = undefined;
  }

  private secretOf(apiKeyId: string): string {
    return createHmac('sha256', this.master).update(`parley-turn-key:${apiKeyId}`).digest('hex');
  }

  private open(): { db: SQLiteDatabase; ledger: SQLiteDatabase } {
    if (this.db && this.ledger) return { db: this.db, ledger: this.ledger };
    // coturn creates its tables when it starts (Parley never changes its schema: coturn's prepared
    // queries would fail once after a change).
    const db = new SQLite(this.file, { fileMustExist: true });
    db.pragma('busy_timeout = 2000');
    // coturn reads this file on every request and sets no busy timeout: in rollback-journal mode a
    // read that meets our write (a revocation's DELETE) fails, and coturn refuses that request —
    // another key's allocation answered 401 (seen in CI). In WAL mode readers never wait for a writer.
    db.pragma('journal_mode = WAL');
    const ledger = new SQLite(`${this.file}.keys`);
    ledger.pragma('busy_timeout = 2000');
    ledger.exec('CREATE TABLE IF NOT EXISTS parley_turn_key (key_id varchar(64) primary key, value varchar(127), granted_at integer)');
    this.db = db;
    this.ledger = ledger;
    return { db, ledger };
  }
}
