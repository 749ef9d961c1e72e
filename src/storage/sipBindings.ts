// SIP phones registered with Parley's registrar (src/sip/registrar.ts): each user's contacts with
// their expiry, kept in the database so that every node sees a phone whichever node it registered
// with. Expired rows are ignored when read and swept now and then with the writes.
import type { Db } from './db.js';

export interface SipBinding {
  aor: string;
  contact: string;
  /** Where its REGISTER came from (`udp:host:port`…): a phone behind NAT is reached there. */
  source: string;
  callId: string;
  cseq: number;
  /** Unix ms. */
  expiresAt: number;
  userAgent: string | null;
}

export class SipBindingStore {
  private lastSweep = 0;

  constructor(private readonly db: Db) {}

  /** `aor`'s bindings that have not expired, soonest to expire last. */
  async of(aor: string, now = Date.now()): Promise<SipBinding[]> {
    const rows = await this.db.selectFrom('sip_bindings').selectAll().where('aor', '=', aor).where('expires_at', '>', now).orderBy('expires_at', 'desc').execute();
    return rows.map((r) => ({ aor: r.aor, contact: r.contact, source: r.source, callId: r.call_id, cseq: Number(r.cseq), expiresAt: Number(r.expires_at), userAgent: r.user_agent }));
  }

  /** Adds or refreshes a binding. */
  async put(b: SipBinding, now = Date.now()): Promise<void> {
    const values = { aor: b.aor, contact: b.contact, source: b.source, call_id: b.callId, cseq: b.cseq, expires_at: b.expiresAt, user_agent: b.userAgent, updated_at: new Date(now).toISOString() };
    await this.db
      .insertInto('sip_bindings')
      .values(values)
      .onConflict((c) => c.columns(['aor', 'contact']).doUpdateSet({ source: values.source, call_id: values.call_id, cseq: values.cseq, expires_at: values.expires_at, user_agent: values.user_agent, updated_at: values.updated_at }))
      .execute();
    await this.sweep(now);
  }

  /** Removes one binding of `aor` (`contact`), or all of them. */
  async remove(aor: string, contact?: string): Promise<void> {
    let query = this.db.deleteFrom('sip_bindings').where('aor', '=', aor);
    if (contact !== undefined) query = query.where('contact', '=', contact);
    await query.execute();
  }


  private async sweep(now: number): Promise<void> {
    if (now - this.lastSweep < 60_000) return;
    this.lastSweep = now;
    await this.db.deleteFrom('sip_bindings').where('expires_at', '<=', now).execute();
  }
}
