// The session an app set when it minted a client secret (OpenAI's client_secrets): kept by the
// token's jti until the token expires, so the call made with it starts from that session on any node.
import type { Db } from './db.js';

export class ClientSecretSessionStore {
  private lastSweep = 0;

  constructor(private readonly db: Db) {}

  async put(jti: string, session: object, expiresAt: number): Promise<void> {
    await this.db.insertInto('client_secret_sessions').values({ jti, session: JSON.stringify(session), expires_at: expiresAt }).execute();
    // Expired rows go now and then, with the writes that make them.
    const now = Math.floor(Date.now() / 1000);
    if (now - this.lastSweep >= 60) {
      this.lastSweep = now;
      await this.db.deleteFrom('client_secret_sessions').where('expires_at', '<', now).execute();
    }
  }

  async get(jti: string): Promise<unknown | undefined> {
    const row = await this.db.selectFrom('client_secret_sessions').select(['session', 'expires_at']).where('jti', '=', jti).executeTakeFirst();
    if (!row || Number(row.expires_at) < Math.floor(Date.now() / 1000)) return undefined;
    return JSON.parse(row.session) as unknown;
  }
}
