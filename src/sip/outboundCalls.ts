// Outbound phone calls (POST /v1/realtime/sip/calls): the destination read (a number through the
// trunk, a SIP URI, or a phone registered with our registrar), the toll-fraud guard (every attempt
// counted against the key's rate limit; the key's allowed destination patterns, applied to the
// number actually dialled however it is written; the trunk's credentials for its own destinations
// only; caps on the outbound calls of each key and of the node), then the call created under the
// one CallManager on a SipTransport and its INVITE sent (outboundInvite.ts). When the callee
// answers the agent speaks first, unless told to wait for the callee.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { openCall } from '../calls/door.js';
import type { DialRefusal, DialRequest, DialResult, SipDialer } from './dialer.js';
import { SipTransport } from '../calls/sip/sipTransport.js';
import { randomId } from '../system/ids.js';
import type { Peer } from './listener.js';
import type { OutboundOptions } from './options.js';
import { OutboundInvite } from './outboundInvite.js';
import type { InviteTarget, UacParts } from './uac.js';
import { hostPort } from './responses.js';
import { TRANSACTION_MS } from './timers.js';

/**
 * A destination as the app wrote it, read. A SIP URI whose user part has no letter dials a number
 * (`number`: it, visual separators dropped): a trunk or PBX routes `sip:+1900…@pbx` or
 * `sip:0019…@pbx` to the telephone network as it would the number itself.
 */
export type Destination = { kind: 'number'; number: string } | { kind: 'uri'; uri: string; user: string; host: string; port: number; number?: string } | { kind: 'user'; user: string };

export class OutboundCalls implements SipDialer {
  /** Live outbound calls' keys, by conversation id (for the caps). */
  private readonly live = new Map<string, string>();
  private readonly core: UacParts['core'];
  private readonly dialogs: UacParts['dialogs'];

  constructor(
    /** Where our INVITEs go through (their responses reach their transactions: sipServer.ts). */
    private readonly parts: UacParts,
    private readonly opts: OutboundOptions,
  ) {
    this.core = parts.core;
    this.dialogs = parts.dialogs;
  }

  async dial<Placed = never>(req: DialRequest<Placed>): Promise<DialResult<Placed>> {
    const refused = (refusal: DialRefusal): DialResult<Placed> => {
      this.opts.counted('refused');
      return { ok: false, refusal };
    };
    if (this.opts.attemptLimit && !req.passedOn) {
      const decision = await this.opts.attemptLimit(req.apiKeyId);
      if (!decision.allowed) return refused({ status: 429, code: 'rate_limit_exceeded', message: 'Too many outbound call attempts for this API key; retry later.', retryAfterSeconds: decision.retryAfterSeconds });
    }
    const destination = readDestination(req.to);
    if (!destination) return refused({ status: 400, code: 'invalid_destination', message: "`to` must be a number (+…), a sip: or tel: URI, or a registered user's name.", param: 'to' });
    const canonical = canonicalOf(destination);
    const patterns = [...(this.opts.allow.get(req.apiKeyId) ?? []), ...(this.opts.allow.get('*') ?? [])];
    if (!destinationAllowed(patterns, destination)) {
      const number = destination.kind === 'uri' && destination.number ? ` (the number ${destination.number})` : '';
      this.core.opts.log.warn({ apiKeyId: req.apiKeyId, to: canonical }, 'outbound SIP call refused: destination not allowed for this key (SIP_OUTBOUND_ALLOW)');
      return refused({ status: 403, code: 'destination_not_allowed', message: `This API key may not call ${canonical}${number} (SIP_OUTBOUND_ALLOW).`, param: 'to' });
    }
    if (this.live.size >= this.opts.maxCalls) return refused({ status: 429, code: 'outbound_calls_exceeded', message: `This server already has ${this.opts.maxCalls} outbound calls (its limit); retry later.`, retryAfterSeconds: 5 });
    const ofKey = [...this.live.values()].filter((k) => k === req.apiKeyId).length;
    if (ofKey >= this.opts.maxCallsPerKey) return refused({ status: 429, code: 'outbound_calls_exceeded', message: `This API key already has ${this.opts.maxCallsPerKey} outbound calls (its limit); end one first.`, retryAfterSeconds: 5 });
    const from = req.from ?? this.opts.callerId;
    const target = await this.targetOf(destination, from);
    if (!target.ok) return refused(target.refusal);

    const { calls, host, media, log } = this.core.opts;
    // Its RTP sockets are opened once the call is admitted.
    let transport!: SipTransport;
    const opened = await openCall(calls, {
      // A phone has no channel for the event protocol. The call may ring for its ring timeout, then
      // wait a transaction's time for the CANCEL's answer.
      request: { apiKeyId: req.apiKeyId, tokenId: randomId('sip_'), halfOpenBudget: 'sip', endUser: canonical, session: req.session, connectTimeoutMs: req.ringTimeoutMs + TRANSACTION_MS + 5000 },
      open: async () => {
        transport = await SipTransport.open(host, media);
        return { transport, accept: async () => undefined };
      },
      ...(req.elsewhere ? { elsewhere: req.elsewhere } : {}),
    });
    if (!opened.ok) {
      // Placed by another node: counted there.
      if (!('placed' in opened.refusal && opened.refusal.placed)) this.opts.counted('refused');
      return { ok: false, call: opened.refusal };
    }
    const { call } = opened;
    const conversationId = call.id;
    this.live.set(conversationId, req.apiKeyId);
    const callLog = log.child({ conversation: conversationId });
    const invite = new OutboundInvite(
      this.parts,
      target.target,
      { conversationId, transport, ringTimeoutMs: req.ringTimeoutMs, observe: (o) => call.observe(o) },
      {
        answered: (dialog) => {
          this.opts.counted('answered');
          callLog.info({ to: canonical }, 'outbound SIP call answered');
          // From now on the dialog ends it (BYE either way), and it can be transferred (REFER).
          transport.bindDialog({ hangUp: () => this.dialogs.hangUp(dialog) });
          this.core.opts.routing.answered(conversationId, req.apiKeyId, (to) => this.dialogs.transfer(dialog, to));
          transport.confirm();
          if (!req.waitForCallee) {
            const refusal = call.createResponse();
            if (!refusal.ok) callLog.warn({ code: refusal.code }, 'the agent could not speak first');
          }
        },
        failed: (reason, status) => {
          this.opts.counted(reason);
          callLog.info({ to: canonical, reason, status }, 'outbound SIP call not answered');
          transport.callerEnded(reason);
        },
      },
    );
    // Until it is answered, a call ended here (hang-up, timeout, shutdown) cancels the INVITE.
    transport.bindDialog({ hangUp: () => invite.hangUp() });
    call.observe({
      ended: () => {
        this.live.delete(conversationId);
        this.core.opts.routing.ended(conversationId);
      },
    });
    invite.start();
    this.opts.counted('placed');
    callLog.info({ to: canonical, via: hostPort(target.target.peer.address, target.target.peer.port) }, 'outbound SIP call placed');
    return { ok: true, conversationId, to: canonical, from };
  }

  /**
   * Where the INVITE goes: the trunk (numbers, and SIP URIs when there is one), the URI's host, or a
   * registered phone. The trunk's credentials answer its challenges for numbers and for URIs of
   * the trunk's own host and port only: a URI of another host sent through it is sent without them.
   */
  private async targetOf(destination: Destination, from: string): Promise<{ ok: true; target: InviteTarget } | { ok: false; refusal: DialRefusal }> {
    const { trunk } = this.opts;
    const { announcedAddress } = this.core.opts;
    const fromUri = (host: string) => `<sip:${from}@${host.includes(':') ? `[${host}]` : host}>`;
    if (destination.kind === 'user') {
      const bindings = await this.core.opts.registrar.bindings.of(destination.user);
      // A phone registered over UDP is reached where its REGISTER came from (it may be behind NAT).
      const binding = bindings.find((b) => b.source.startsWith('udp:'));
      if (!binding) return { ok: false, refusal: { status: 404, code: 'not_registered', message: `No phone of user '${destination.user}' is registered over UDP.`, param: 'to' } };
      const [, address, port] = /^udp:(.+):(\d+)$/.exec(binding.source)!;
      return { ok: true, target: { uri: binding.contact, peer: { transport: 'udp', address: address!, port: Number(port) }, from: fromUri(announcedAddress) } };
    }
    if (destination.kind === 'number' && !trunk) return { ok: false, refusal: { status: 400, code: 'no_trunk', message: 'Numbers are called through a SIP trunk, and this server has none (SIP_OUTBOUND_TRUNK).', param: 'to' } };
    const hop = trunk ?? (destination.kind === 'uri' ? { host: destination.host, port: destination.port } : undefined)!;
    let address = hop.host;
    if (!isIP(address)) {
      try {
        address = (await lookup(address)).address;
      } catch {
        return { ok: false, refusal: { status: 503, code: 'destination_unresolved', message: `The name ${hop.host} does not resolve now; retry later.`, retryAfterSeconds: 30 } };
      }
    }
    const uri = destination.kind === 'number' ? `sip:${destination.number}@${hostPort(trunk!.host, trunk!.port)}` : destination.uri;
    const trunksOwn = destination.kind === 'number' || (trunk !== undefined && destination.host.toLowerCase() === trunk.host.toLowerCase() && destination.port === trunk.port);
    const credentials = trunksOwn && trunk?.user !== undefined ? { user: trunk.user, password: trunk.password ?? '' } : undefined;
    const peer: Peer = { transport: 'udp', address, port: hop.port };
    return { ok: true, target: { uri, peer, from: fromUri(trunk ? trunk.host : announcedAddress), ...(credentials ? { credentials } : {}) } };
  }
}

/** Reads the `to` of a request: +number, tel:+number, sip:user@host[:port], or a registered user's name. */
export function readDestination(to: string): Destination | undefined {
  const number = /^(?:tel:)?(\+[0-9]{3,20})$/.exec(to);
  if (number) return { kind: 'number', number: number[1]! };
  const uri = /^sip:([A-Za-z0-9+._~!$&'()*=-]{1,64})@(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]{1,253})(?::(\d{1,5}))?$/.exec(to);
  if (uri) {
    const port = uri[3] ? Number(uri[3]) : 5060;
    if (port < 1 || port > 65535) return undefined;
    const user = uri[1]!;
    const number = /[A-Za-z]/.test(user) ? undefined : user.replace(/[-.()]/g, '');
    return { kind: 'uri', uri: to, user, host: uri[2]!.replace(/^\[|\]$/g, ''), port, ...(number ? { number } : {}) };
  }
  if (/^[A-Za-z0-9._~-]{1,64}$/.test(to)) return { kind: 'user', user: to };
  return undefined;
}

function canonicalOf(d: Destination): string {
  return d.kind === 'number' ? d.number : d.kind === 'uri' ? d.uri : d.user;
}

/**
 * Whether SIP_OUTBOUND_ALLOW's `patterns` (one key's and every key's) let `d` be called. A pattern
 * is of one kind, by its start: `sip:` a SIP URI's; `+` (or `tel:+`) a number's; a digit a number's
 * or a registered user's name (`1001`); anything else (`alice`, `*`) a registered user's name only.
 * A number is matched as dialled, however it is written: `+…`, `tel:+…`, or a SIP URI's user part
 * without letters (which must then match a number pattern as well as a `sip:` one). So `*` alone
 * means every registered phone, never every number.
 */
export function destinationAllowed(patterns: string[], d: Destination): boolean {
  const numberPatterns = patterns.filter((p) => /^(?:tel:)?[+0-9]/.test(p)).map((p) => p.replace(/^tel:/, ''));
  const numberAllowed = (number: string) => numberPatterns.some((p) => globMatches(p, number));
  if (d.kind === 'number') return numberAllowed(d.number);
  if (d.kind === 'user') return patterns.some((p) => !/^(?:sip:|tel:|\+)/.test(p) && globMatches(p, d.user));
  return patterns.some((p) => p.startsWith('sip:') && globMatches(p, d.uri)) && (d.number === undefined || numberAllowed(d.number));
}

/** A glob (`*`: any characters, all else literal) matched against the whole of `value`. */
export function globMatches(pattern: string, value: string): boolean {
  const regex = new RegExp(`^${pattern.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
  return regex.test(value);
}
