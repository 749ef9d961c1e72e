// Registering with upstream providers (SIP_REGISTRATIONS): many SIP trunks and hosted PBXes deliver
// an account's calls to wherever that account last registered, so a node without a fixed address
// (or behind NAT) registers its SIP port there. Each account is a REGISTER client (RFC 3261 §10.2)
// on our UDP socket: the provider's digest challenge answered, the registration refreshed before
// the granted expiry, a failure retried with backoff (2 s doubling to 5 minutes, or the provider's
// Retry-After), its state told to the node (metrics, /readyz).
import { randomBytes } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { SipRegistrationSetting } from '../config/env.js';
import { newCallId } from './callIds.js';
import type { ClientTransactions } from './clientTransactions.js';
import type { SipCore } from './core.js';
import { digestAnswer } from './digest.js';
import type { Peer } from './listener.js';
import { param, uriOf, writeMessage, type SipResponse } from './message.js';
import type { RegistrationState } from './options.js';
import { hostPort } from './responses.js';

const FIRST_RETRY_MS = 2000;
const LONGEST_RETRY_MS = 5 * 60_000;

class OutboundRegistration {
  private readonly callId = newCallId();
  private readonly fromTag = randomBytes(6).toString('hex');
  private cseq = 0;
  private expires: number;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  readonly state: RegistrationState;

  constructor(
    private readonly core: SipCore,
    private readonly requests: ClientTransactions,
    private readonly account: SipRegistrationSetting,
    private readonly changed: (state: RegistrationState) => void,
  ) {
    this.expires = account.expires;
    this.state = { registrar: hostPort(account.host, account.port), user: account.user, state: 'registering', failures: 0 };
  }

  start(): void {
    void this.attempt();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private get aor(): string {
    return `sip:${this.account.user}@${hostPort(this.account.host, this.account.port).replace(/:5060$/, '')}`;
  }

  /** One REGISTER; `authorization` answers the challenge of the previous one. */
  private async attempt(authorization?: [string, string], briefRetried = false): Promise<void> {
    if (this.stopped) return;
    let address = this.account.host;
    if (!isIP(address)) {
      try {
        address = (await lookup(address)).address;
      } catch {
        return this.failed(0);
      }
    }
    if (this.stopped) return;
    const peer: Peer = { transport: 'udp', address, port: this.account.port };
    const ours = this.core.hostPortFor(peer);
    const branch = 'z9hG4bK' + randomBytes(8).toString('hex');
    const uri = `sip:${hostPort(this.account.host, this.account.port)}`;
    const bytes = writeMessage(`REGISTER ${uri} SIP/2.0`, [
      ['Via', `SIP/2.0/UDP ${ours};branch=${branch};rport`],
      ['Max-Forwards', '70'],
      ['From', `<${this.aor}>;tag=${this.fromTag}`],
      ['To', `<${this.aor}>`],
      ['Call-ID', this.callId],
      ['CSeq', `${++this.cseq} REGISTER`],
      ['Contact', `<sip:${this.account.user}@${ours}>`],
      ['Expires', String(this.expires)],
      ['User-Agent', 'Parley'],
      ...(authorization ? [authorization] : []),
    ]);
    this.requests.start(peer, branch, bytes, (status, res) => this.answered(status, res, uri, authorization !== undefined, briefRetried));
  }

  private answered(status: number, res: SipResponse | undefined, uri: string, authorized: boolean, briefRetried: boolean): void {
    if (this.stopped) return;
    if (status >= 200 && status < 300 && res) return this.registered(res);
    // Challenged: answered once per attempt (a second challenge means the password is wrong).
    if ((status === 401 || status === 407) && res && !authorized) {
      const challenge = res.headers.get(status === 401 ? 'www-authenticate' : 'proxy-authenticate') ?? '';
      const answer = digestAnswer(challenge, 'REGISTER', uri, this.account.user, this.account.password);
      if (answer) return void this.attempt([status === 401 ? 'Authorization' : 'Proxy-Authorization', answer], briefRetried);
    }
    // Asked for too short a registration: once more with the provider's minimum.
    const minExpires = Number(res?.headers.get('min-expires'));
    if (status === 423 && !briefRetried && Number.isInteger(minExpires) && minExpires > this.expires && minExpires <= 86_400) {
      this.expires = minExpires;
      return void this.attempt(undefined, true);
    }
    this.failed(status, res);
  }

  private registered(res: SipResponse): void {
    const now = Date.now();
    // The expiry granted to our contact, else the response's Expires, else what we asked.
    const ours = res.headers.all('contact').find((c) => uriOf(c).startsWith(`sip:${this.account.user}@`));
    const granted = Number(param(ours ?? '', 'expires') ?? res.headers.get('expires') ?? this.expires);
    const seconds = Number.isFinite(granted) && granted > 0 ? granted : this.expires;
    Object.assign(this.state, { state: 'registered', status: res.status, expiresAt: now + seconds * 1000, failures: 0 });
    this.changed(this.state);
    // Refreshed a minute before it lapses (half-way for short ones).
    const refreshMs = seconds > 120 ? (seconds - 60) * 1000 : seconds * 500;
    this.later(refreshMs);
  }

  private failed(status: number, res?: SipResponse): void {
    this.state.failures++;
    Object.assign(this.state, { state: 'failed', status, expiresAt: undefined });
    this.changed(this.state);
    const retryAfter = Number(res?.headers.get('retry-after')?.split(/[\s;(]/)[0]);
    const backoff = Math.min(FIRST_RETRY_MS * 2 ** (this.state.failures - 1), LONGEST_RETRY_MS);
    this.later(Number.isInteger(retryAfter) && retryAfter > 0 ? Math.min(retryAfter * 1000, LONGEST_RETRY_MS) : backoff);
  }

  private later(ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.attempt(), ms);
    this.timer.unref();
  }
}

/** The node's upstream registrations, each kept up on its own. */
export class OutboundRegistrations {
  private readonly all: OutboundRegistration[];

  constructor(core: SipCore, requests: ClientTransactions, accounts: SipRegistrationSetting[], changed: (state: RegistrationState) => void) {
    this.all = accounts.map((a) => new OutboundRegistration(core, requests, a, changed));
  }

  start(): void {
    for (const r of this.all) r.start();
  }

  get states(): RegistrationState[] {
    return this.all.map((r) => ({ ...r.state }));
  }

  stop(): void {
    for (const r of this.all) r.stop();
  }
}
