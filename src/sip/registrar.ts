// The registrar (RFC 3261 §10.3): a desk phone or softphone with a Parley SIP account (a user of
// SIP_USERS) registers its contact, authenticated by digest like a call; its bindings, each with an
// expiry, are kept in the store (storage/sipBindings.ts) so that every node knows where to reach
// the phone. A REGISTER without Contact asks for the user's bindings; `Contact: *` with Expires 0
// removes them all. Digest as for calls (callerAdmission.ts): a wrong password is refused (403) and
// counts toward its address's backoff (authBackoff.ts). REGISTERs are counted per source address
// (outside SIP_TRUSTED_CIDRS) against RATE_LIMIT_SIP_REGISTERS_PER_IP: past it, 503 with Retry-After.
import { contains } from '../system/cidr.js';
import { authenticate, refuseUnauthenticated } from './callerAdmission.js';
import type { SipCore } from './core.js';
import type { Peer } from './listener.js';
import { param, uriOf, userOf, type SipRequest } from './message.js';
import type { RegistrarOptions } from './options.js';
import type { AnyServerTransaction } from './serverTransactions.js';

/** Registrations asked for shorter than this are refused 423 (each refresh costs a store write). */
export const MIN_EXPIRES_SECONDS = 60;
/** A phone's registration asked for without an expiry, and the longest granted. */
const DEFAULT_EXPIRES_SECONDS = 3600;
/** Contacts one user may have registered at once (a phone, a softphone, a spare…). */
const MAX_CONTACTS_PER_USER = 10;

export class Registrar {
  constructor(
    private readonly core: SipCore,
    private readonly opts: RegistrarOptions,
  ) {}

  async register(req: SipRequest, peer: Peer, tx: AnyServerTransaction): Promise<void> {
    const { auth, trusted } = this.core.opts;
    const respond = this.core.respond.bind(this.core);
    if (this.opts.limit && !(trusted && contains(trusted, peer.address))) {
      const decision = await this.opts.limit(peer.address);
      if (!decision.allowed) return respond(req, peer, 503, 'Service Unavailable', tx, [['Retry-After', String(decision.retryAfterSeconds)]]);
    }
    if (!auth.enabled) return respond(req, peer, 403, 'Forbidden', tx, [['Warning', '399 parley "no SIP accounts here (SIP_USERS)"']]);
    const answer = await authenticate(this.core.opts, req, peer.address);
    if (answer.verdict !== 'admitted') return refuseUnauthenticated(this.core, req, peer, tx, answer.verdict);
    const aor = answer.user;
    // A user registers its own address only.
    if (userOf(req.to) !== aor) return respond(req, peer, 403, 'Forbidden', tx, [['Warning', '399 parley "the To names another user"']]);

    const contacts = req.headers.all('contact');
    const headerExpires = req.headers.get('expires');
    const expiresOf = (contact: string): number => {
      const text = param(contact, 'expires') ?? headerExpires;
      const value = text === undefined ? DEFAULT_EXPIRES_SECONDS : Number(text.trim());
      return Number.isInteger(value) && value >= 0 ? Math.min(value, DEFAULT_EXPIRES_SECONDS) : DEFAULT_EXPIRES_SECONDS;
    };
    try {
      if (contacts.length === 1 && contacts[0]!.trim() === '*') {
        if (headerExpires?.trim() !== '0') return respond(req, peer, 400, 'Bad Request', tx, [['Warning', '399 parley "Contact: * needs Expires: 0"']]);
        await this.opts.bindings.remove(aor);
        return respond(req, peer, 200, 'OK', tx, [['Date', new Date().toUTCString()]]);
      }
      const asked = contacts.map((c) => ({ uri: uriOf(c), expires: expiresOf(c) }));
      if (asked.some((c) => !/^sips?:/i.test(c.uri))) return respond(req, peer, 400, 'Bad Request', tx, [['Warning', '399 parley "a Contact that is no SIP URI"']]);
      const brief = asked.find((c) => c.expires > 0 && c.expires < MIN_EXPIRES_SECONDS);
      if (brief) return respond(req, peer, 423, 'Interval Too Brief', tx, [['Min-Expires', String(MIN_EXPIRES_SECONDS)]]);
      const now = Date.now();
      const current = await this.opts.bindings.of(aor, now);
      const added = asked.filter((c) => c.expires > 0 && !current.some((b) => b.contact === c.uri));
      if (current.length + added.length > MAX_CONTACTS_PER_USER) return respond(req, peer, 403, 'Forbidden', tx, [['Warning', `399 parley "at most ${MAX_CONTACTS_PER_USER} contacts per user"`]]);
      for (const c of asked) {
        const known = current.find((b) => b.contact === c.uri);
        // The same phone's older REGISTER arriving late changes nothing (RFC 3261 §10.3 step 7).
        if (known && known.callId === req.callId && known.cseq >= req.cseq.seq) continue;
        if (c.expires === 0) await this.opts.bindings.remove(aor, c.uri);
        else {
          await this.opts.bindings.put({
            aor,
            contact: c.uri,
            source: `${peer.transport}:${peer.address}:${peer.port}`,
            callId: req.callId,
            cseq: req.cseq.seq,
            expiresAt: now + c.expires * 1000,
            userAgent: req.headers.get('user-agent')?.slice(0, 200) ?? null,
          });
        }
      }
      const bindings = await this.opts.bindings.of(aor, now);
      if (asked.length) this.core.opts.log.info({ user: aor, contacts: bindings.length }, 'SIP registration');
      respond(req, peer, 200, 'OK', tx, [
        ...bindings.map((b): [string, string] => ['Contact', `<${b.contact}>;expires=${Math.max(0, Math.round((b.expiresAt - now) / 1000))}`]),
        ['Date', new Date(now).toUTCString()],
      ]);
    } catch (err) {
      // The store cannot answer now: the phone retries.
      this.core.opts.log.warn({ err }, 'SIP registration not stored');
      respond(req, peer, 503, 'Service Unavailable', tx, [['Retry-After', '30']]);
    }
  }
}
