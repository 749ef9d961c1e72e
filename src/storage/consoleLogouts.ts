// Console sessions that were logged out before they expired. A session is a signed cookie any node
// accepts (src/http/console/consoleSessions.ts); its id is kept here from the logout until its
// expiry, so every node sharing the database refuses it from then on.
import type { Db } from './db.js';

export class ConsoleLogoutStore {
  private lastSweep = 0;

  constructor(private readonly db: Db) {}

  /** Session `id`, valid until `expiresAt` (unix s), is logged out. */
  async add(id: string, expiresAt: number): Promise<void> {
    await this.db
      .insertInto('console_logouts')
      .values({ session_id: id, expires_at: expiresAt })
      .onConflict((c) => c.column('session_id').doNothing())
      .execute();
    // Rows of expired sessions go now and then, with the writes that make them.
    const now = Math.floor(Date.now() / 1000);
    if (now - this.lastSweep >= 60) {
      this.lastSweep = now;
      await this.db.deleteFrom('console_logouts').where('expires_at', '<', now).execute();
    }
  }

  async has(id: string): Promise<boolean> {
    return (await this.db.selectFrom('console_logouts').select('session_id').where('session_id', '=', id).executeTakeFirst()) !== undefined;
  }
}
