// The SIP front door: a user agent server on UDP and TCP (and TLS, with a certificate) that turns an
// INVITE into a call (a SipTransport under the one Call) and keeps its dialog — ACK, BYE either
// way, CANCEL, OPTIONS, re-INVITE (hold and resume), REFER and its NOTIFYs. Here messages are read
// and each request goes to its transaction (serverTransactions.ts) and its handler: a new call's
// INVITE (invite.ts), a request inside a dialog (inDialog.ts), or one answered here.
import { ClientTransactions } from './clientTransactions.js';
import { ALLOW, type SipCore } from './core.js';
import { Dialogs } from './dialogs.js';
import { InDialogRequests } from './inDialog.js';
import { InviteHandler } from './invite.js';
import { InviteClientTransactions } from './inviteClientTransaction.js';
import type { ListenerEvents, Peer, SipListener, SipPorts } from './listener.js';
import { param, parseMessage, type SipRequest } from './message.js';
import { hostPort, reasonPhrase, responseTo, type Headers } from './responses.js';
import { OutboundCalls } from './outboundCalls.js';
import type { RegistrationState, SipServerOptions } from './options.js';
import { OutboundRegistrations } from './outboundRegistrations.js';
import { Registrar } from './registrar.js';
import { refusalOf } from './requestChecks.js';
import { InviteServerTransaction, ServerTransactions, type AnyServerTransaction } from './serverTransactions.js';

export type { SipServerOptions } from './options.js';

/** SIP's methods (RFC 3261 and the registered extensions), whether we take them or not. */
const KNOWN_METHODS = new Set(['INVITE', 'ACK', 'BYE', 'CANCEL', 'OPTIONS', 'REGISTER', 'INFO', 'MESSAGE', 'NOTIFY', 'PRACK', 'PUBLISH', 'REFER', 'SUBSCRIBE', 'UPDATE']);

export class SipServer implements SipCore {
  private listener!: SipListener;
  private readonly transactions = new ServerTransactions();
  private readonly requests: ClientTransactions = new ClientTransactions((peer, bytes) => this.send(peer, bytes));
  /** Our INVITEs' client transactions (outbound calls'). */
  private readonly invitesSent = new InviteClientTransactions((peer, bytes) => this.send(peer, bytes));
  private readonly dialogs = new Dialogs(this, this.requests);
  private readonly invites = new InviteHandler(this, this.dialogs);
  private readonly inDialog = new InDialogRequests(this, this.dialogs);
  /** Our outbound calls (POST /v1/realtime/sip/calls) and their INVITEs. */
  readonly outbound: OutboundCalls;
  private registrar!: Registrar;
  private registrations!: OutboundRegistrations;

  private constructor(readonly opts: SipServerOptions) {
    this.outbound = new OutboundCalls({ core: this, invites: this.invitesSent, requests: this.requests, dialogs: this.dialogs }, opts.outbound);
  }

  /** Starts the server on the listener `listen` opens (its own sockets, or a relay from the workers' primary). */
  static async start(opts: SipServerOptions, listen: (events: ListenerEvents) => Promise<SipListener>): Promise<SipServer> {
    const server = new SipServer(opts);
    server.registrar = new Registrar(server, opts.registrar);
    server.listener = await listen({
      received: (bytes, peer) => server.received(bytes, peer),
      carriesCall: (connection) => server.dialogs.carries(connection),
    });
    server.registrations = new OutboundRegistrations(server, server.requests, opts.registrations.accounts, opts.registrations.changed);
    server.registrations.start();
    return server;
  }

  get ports(): SipPorts {
    return this.listener.ports;
  }

  /** The upstream registrations' states (SIP_REGISTRATIONS). */
  get registrationStates(): RegistrationState[] {
    return this.registrations.states;
  }

  async close(): Promise<void> {
    this.registrations?.stop();
    this.invitesSent.close();
    this.requests.close();
    this.dialogs.close();
    this.transactions.close();
    await this.listener.close();
  }

  send(peer: Peer, bytes: Buffer): void {
    this.listener.send(peer, bytes);
  }

  respond(req: SipRequest, peer: Peer, status: number, reason: string, tx?: AnyServerTransaction, extra: Headers = [], toTag?: string, body = ''): void {
    const bytes = responseTo(req, peer, status, reason, extra, toTag, body);
    if (tx) tx.respond(status, bytes);
    else this.send(peer, bytes);
  }

  hostPortFor(peer: Peer): string {
    return hostPort(this.opts.announcedAddress, this.listener.portOf(peer));
  }

  contact(peer: Peer): string {
    return `<sip:parley@${this.hostPortFor(peer)}${peer.transport === 'udp' ? '' : `;transport=${peer.transport}`}>`;
  }

  private received(bytes: Buffer, peer: Peer): void {
    const parsed = parseMessage(bytes);
    if (!parsed.ok) {
      // Answered statelessly: a retransmission is read, and refused, again.
      const status = parsed.status ?? 400;
      if (parsed.partial && parsed.partial.method !== 'ACK') this.respond(parsed.partial, peer, status, reasonPhrase(status), undefined, [['Warning', `399 parley "${parsed.error}"`]]);
      return;
    }
    const message = parsed.message;
    try {
      if (message.kind === 'response') {
        if (!this.invitesSent.received(message)) this.requests.received(message);
      }
      else this.requestReceived(message, peer);
    } catch (err) {
      // A message we fail on is answered 500 (never a crash).
      this.opts.log.error({ err }, 'SIP message handling failed');
      if (message.kind === 'request' && message.method !== 'ACK') this.respond(message, peer, 500, 'Server Internal Error');
    }
  }

  private requestReceived(req: SipRequest, peer: Peer): void {
    if (req.method === 'ACK') return this.ackReceived(req);
    const known = this.transactions.find(req);
    // A retransmission: the same answer again (or none yet, while we work on it).
    if (known) return known.retransmitted();
    const toTag = param(req.to, 'tag');
    // A request we are already handling that came again by another path (before its transaction
    // opens: it answers this branch, not the first one's).
    const merged = !toTag && req.method !== 'CANCEL' && this.transactions.merged(req);
    const tx = this.transactions.open(req, peer, (bytes) => this.send(peer, bytes));
    if (!tx) return;
    if (merged) return this.respond(req, peer, 482, 'Loop Detected', tx);
    const refusal = refusalOf(req);
    if (refusal) return this.respond(req, peer, refusal.status, refusal.reason, tx, refusal.headers);
    if (tx instanceof InviteServerTransaction) {
      if (toTag) return this.inDialog.reInvite(req, peer, tx);
      return void this.invites.invite(req, peer, tx).catch((err: Error) => {
        this.opts.log.error({ err }, 'SIP INVITE handling failed');
        this.respond(req, peer, 500, 'Server Internal Error', tx);
      });
    }
    switch (req.method) {
      case 'BYE':
        return this.inDialog.bye(req, peer, tx);
      case 'CANCEL':
        return this.cancel(req, peer, tx);
      case 'NOTIFY':
        return this.inDialog.notify(req, peer, tx);
      case 'REGISTER':
        return void this.registrar.register(req, peer, tx).catch((err: Error) => {
          this.opts.log.error({ err }, 'SIP REGISTER handling failed');
          this.respond(req, peer, 500, 'Server Internal Error', tx);
        });
      case 'INFO':
        return this.inDialog.info(req, peer, tx);
      case 'OPTIONS':
        return this.respond(req, peer, 200, 'OK', tx, [
          ['Allow', ALLOW],
          ['Accept', 'application/sdp'],
        ]);
      default:
        // A method SIP defines that we do not take: 405; one we do not know at all: 501 (RFC 3261 §21.5.2).
        if (KNOWN_METHODS.has(req.method)) return this.respond(req, peer, 405, 'Method Not Allowed', tx, [['Allow', ALLOW]]);
        return this.respond(req, peer, 501, 'Not Implemented', tx, [['Allow', ALLOW]]);
    }
  }

  /** An ACK of our failure response belongs to its INVITE's transaction; one of our 2xx, to the dialog. */
  private ackReceived(req: SipRequest): void {
    const invite = this.transactions.find(req, 'INVITE');
    if (invite instanceof InviteServerTransaction && invite.acknowledged()) return;
    this.dialogs.ackReceived(req);
  }

  private cancel(req: SipRequest, peer: Peer, tx: AnyServerTransaction): void {
    const invite = this.transactions.find(req, 'INVITE');
    if (!(invite instanceof InviteServerTransaction) || !req.branch) return this.respond(req, peer, 481, 'Call/Transaction Does Not Exist', tx);
    this.respond(req, peer, 200, 'OK', tx);
    // Once answered, a CANCEL changes nothing (the caller sends BYE).
    if (invite.final) return;
    invite.cancelled = true;
    invite.ringing?.abort();
  }
}
