// The SIP front door: a user agent server on UDP and TCP (and TLS, with a certificate) that turns an INVITE into a call (a
// SipTransport under the one Call) and keeps its dialog — ACK, BYE either way, CANCEL, OPTIONS,
// re-INVITE (hold and resume). Callers are admitted by source range or digest. Server transactions
// are kept just long enough to answer retransmissions with the same response; over UDP our 2xx and
// our BYE are retransmitted (RFC 3261 timers) until the caller acknowledges them.
import { randomBytes } from 'node:crypto';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { createServer, type Server, type Socket as TcpSocket } from 'node:net';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import type { BlockList } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import type { Session } from '../session/session.js';
import { contains, unmapped } from '../system/cidr.js';
import { randomId } from '../system/ids.js';
import { CallCapacityExceeded, CallLimitExceeded, type CallManager } from '../calls/callManager.js';
import { TransportRejected } from '../calls/transport.js';
import { callerAdmission } from './callerAdmission.js';
import type { DigestAuth } from './digest.js';
import { MAX_MESSAGE_BYTES, frame, param, parseMessage, uriOf, userOf, writeMessage, type SipRequest, type SipResponse } from './message.js';
import { readOffer, writeAnswer, type AudioOffer } from '../calls/sip/sdp.js';
import type { RouteOutcome, SipRouting } from './sipRouting.js';
import { SipTransport } from '../calls/sip/sipTransport.js';

/** RFC 3261 timers: T1 (the first retransmission), T2 (the longest interval), 64·T1 (give up). */
const T1_MS = 500;
const T2_MS = 4000;
const TRANSACTION_MS = 64 * T1_MS;

const ALLOW = 'INVITE, ACK, BYE, CANCEL, OPTIONS, NOTIFY';

/** Parley's id of the call in the 180 and 200 (for a PBX's logs, and the app's hangup and sideband). */
const CALL_ID_HEADER = 'X-Parley-Call-Id';

/** TCP connections one node keeps open at most (each a trunk or a phone). */
const MAX_TCP_CONNECTIONS = 1024;

/** Server transactions remembered at most (32 s each): past it, a flood's new requests go unanswered. */
const MAX_TRANSACTIONS = 20_000;

/** A TCP connection that carries no call is closed after this long without a message. */
const TCP_IDLE_MS = 60_000;

export interface SipServerOptions {
  host: string;
  port: number;
  /** SIP over TLS (RFC 3261 §26.2): its port (0 picks one) and PEM certificate chain and key. Unset: none. */
  tls?: { port: number; cert: string; key: string };
  /** The address our SDP and Contact announce (reachable by callers). */
  announcedAddress: string;
  calls: CallManager;
  auth: DigestAuth;
  /** Sources admitted without authentication; undefined when none are configured. */
  trusted: BlockList | undefined;
  /** The API key that owns SIP calls (undefined: none exists yet). */
  owner: () => Promise<string | undefined>;
  /** A new call's session (the default agent). */
  session: () => Session;
  /** Who decides what a ringing call becomes (sipRouting.ts). */
  routing: SipRouting;
  /**
   * Counts an INVITE from an untrusted source address (challenged and refused ones included): a
   * scanner or a password guesser gets `503` with Retry-After past its limit. Unset: no limit.
   */
  inviteLimit?: (address: string) => Promise<{ allowed: boolean; retryAfterSeconds: number }>;
  log: FastifyBaseLogger;
}

/** Where a message came from and its answer goes: a datagram's source, or a stream connection. */
interface Peer {
  transport: 'udp' | 'tcp' | 'tls';
  address: string;
  port: number;
  socket?: TcpSocket;
}

interface ServerTransaction {
  /** The last response sent, resent on a retransmitted request (none yet: still working on it). */
  response?: Buffer;
  /** An INVITE's: CANCELled before its final response. */
  cancelled?: boolean;
  /** An INVITE's while it rings, waiting for the app's decision: aborted by a CANCEL. */
  ringing?: AbortController;
  final?: boolean;
}

interface Dialog {
  /** Parley's id of the call (conv_…). */
  conversationId: string;
  callId: string;
  localTag: string;
  /** Our From and To in requests we send (our To-tagged To, the caller's From). */
  localUri: string;
  remoteUri: string;
  remoteTarget: string;
  routeSet: string[];
  peer: Peer;
  localSeq: number;
  transport: SipTransport;
  sessionId: number;
  sdpVersion: number;
  /** The 2xx we retransmit until its ACK. */
  unacked?: { timer: NodeJS.Timeout; cseq: number };
  ended: boolean;
}

export class SipServer {
  private readonly udp: UdpSocket;
  private readonly tcp: Server;
  private readonly tls: TlsServer | undefined;
  private readonly transactions = new Map<string, ServerTransaction>();
  private readonly dialogs = new Map<string, Dialog>();
  /** Our requests (BYE, REFER) awaiting a final response, by branch: their retransmission timer and what the response means. */
  private readonly outgoing = new Map<string, { timer?: NodeJS.Timeout; onFinal?: (status: number) => void }>();
  private readonly connections = new Set<TcpSocket>();
  private listening: { udp: number; tcp: number; tls?: number } = { udp: 0, tcp: 0 };
  private closed = false;

  private constructor(private readonly opts: SipServerOptions) {
    this.udp = createSocket(opts.host.includes(':') ? 'udp6' : 'udp4');
    this.udp.on('message', (bytes, from) => this.received(bytes, { transport: 'udp', address: unmapped(from.address), port: from.port }));
    // ICMP errors of sends to a gone caller: nothing to do.
    this.udp.on('error', () => {});
    this.tcp = createServer((socket) => this.accepted(socket, 'tcp'));
    this.tcp.maxConnections = MAX_TCP_CONNECTIONS;
    if (opts.tls) {
      // A handshake that fails (a scanner, a wrong certificate) is the connection's end, nothing more.
      this.tls = createTlsServer({ cert: opts.tls.cert, key: opts.tls.key, handshakeTimeout: 10_000 }, (socket) => this.accepted(socket, 'tls'));
      this.tls.on('tlsClientError', () => {});
      this.tls.maxConnections = MAX_TCP_CONNECTIONS;
    }
  }

  static async start(opts: SipServerOptions): Promise<SipServer> {
    const server = new SipServer(opts);
    await server.listen();
    return server;
  }

  get ports(): { udp: number; tcp: number; tls?: number } {
    return this.listening;
  }

  private async listen(): Promise<void> {
    const { host, port } = this.opts;
    const udpPort = await new Promise<number>((resolve, reject) => {
      this.udp.once('error', reject);
      // Exclusive: in a cluster worker, the socket is this process's own, not one shared through the primary.
      this.udp.bind({ port, address: host, exclusive: true }, () => resolve(this.udp.address().port));
    });
    // TCP on the same port (the one a trunk is told), even when UDP's was picked at random.
    await new Promise<void>((resolve, reject) => {
      this.tcp.once('error', reject);
      this.tcp.listen(udpPort, host, () => resolve());
    });
    this.listening = { udp: udpPort, tcp: udpPort };
    const tls = this.tls;
    if (tls) {
      await new Promise<void>((resolve, reject) => {
        tls.once('error', reject);
        tls.listen(this.opts.tls!.port, host, () => resolve());
      });
      this.listening.tls = (tls.address() as { port: number }).port;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const { timer } of this.outgoing.values()) clearTimeout(timer);
    for (const d of this.dialogs.values()) if (d.unacked) clearTimeout(d.unacked.timer);
    for (const socket of this.connections) socket.destroy();
    await new Promise<void>((resolve) => this.tcp.close(() => resolve()));
    if (this.tls) await new Promise<void>((resolve) => this.tls!.close(() => resolve()));
    await new Promise<void>((resolve) => this.udp.close(() => resolve()));
  }

  // Wire

  /** A stream connection (TCP, or TLS once its handshake is done): SIP messages framed by Content-Length. */
  private accepted(socket: TcpSocket, transport: 'tcp' | 'tls'): void {
    this.connections.add(socket);
    let buffer = Buffer.alloc(0);
    const peer: Peer = { transport, address: unmapped(socket.remoteAddress ?? ''), port: socket.remotePort ?? 0, socket };
    socket.setTimeout(TCP_IDLE_MS, () => {
      if (![...this.dialogs.values()].some((d) => d.peer.socket === socket)) socket.destroy();
    });
    socket.on('error', () => {});
    socket.on('close', () => this.connections.delete(socket));
    socket.on('data', (chunk) => {
      buffer = buffer.length ? Buffer.concat([buffer, chunk]) : chunk;
      for (;;) {
        const next = frame(buffer);
        if (next.kind === 'incomplete') return;
        if (next.kind === 'invalid') {
          // A stream we cannot frame cannot be resynchronised: the connection goes.
          this.opts.log.debug({ peer: peer.address, error: next.error }, 'SIP stream unreadable; connection closed');
          return void socket.destroy();
        }
        buffer = Buffer.from(next.rest);
        if (next.kind === 'keepalive') {
          if (next.rest.length === 0) socket.write('\r\n');
          continue;
        }
        this.received(next.bytes, peer);
      }
    });
  }

  private send(peer: Peer, bytes: Buffer): void {
    // An INVITE still being worked on when the server closes has nowhere to answer.
    if (this.closed) return;
    if (peer.transport === 'udp') this.udp.send(bytes, peer.port, peer.address);
    else if (peer.socket && !peer.socket.destroyed) peer.socket.write(bytes);
  }

  private received(bytes: Buffer, peer: Peer): void {
    if (bytes.length > MAX_MESSAGE_BYTES) return;
    // Keep-alive CRLFs over UDP.
    if (bytes.length <= 4 && /^[\r\n]*$/.test(bytes.toString('latin1'))) return;
    const parsed = parseMessage(bytes);
    if (!parsed.ok) {
      if (parsed.partial && parsed.partial.method !== 'ACK') this.respond(parsed.partial, peer, 400, 'Bad Request');
      return;
    }
    const message = parsed.message;
    try {
      if (message.kind === 'response') this.responseReceived(message);
      else this.requestReceived(message, peer);
    } catch (err) {
      // A message we fail on is answered 500 (never a crash).
      this.opts.log.error({ err }, 'SIP message handling failed');
      if (message.kind === 'request' && message.method !== 'ACK') this.respond(message, peer, 500, 'Server Internal Error');
    }
  }

  // Requests

  private requestReceived(req: SipRequest, peer: Peer): void {
    if (req.method === 'ACK') return this.ackReceived(req);
    const key = transactionKey(req);
    const known = this.transactions.get(key);
    if (known) {
      // A retransmission: the same answer again (or none yet, while we work on it).
      if (known.response) this.send(peer, known.response);
      return;
    }
    if (this.transactions.size >= MAX_TRANSACTIONS) return;
    const tx: ServerTransaction = {};
    this.transactions.set(key, tx);
    setTimeout(() => this.transactions.delete(key), TRANSACTION_MS).unref();
    const toTag = param(req.to, 'tag');
    switch (req.method) {
      case 'INVITE':
        if (toTag) return this.reInvite(req, peer, tx, toTag);
        return void this.invite(req, peer, tx).catch((err: Error) => {
          this.opts.log.error({ err }, 'SIP INVITE handling failed');
          this.respond(req, peer, 500, 'Server Internal Error', tx);
        });
      case 'BYE':
        return this.bye(req, peer, tx, toTag);
      case 'CANCEL':
        return this.cancel(req, peer, tx);
      case 'NOTIFY':
        return this.notify(req, peer, tx, toTag);
      case 'OPTIONS':
        return this.respond(req, peer, 200, 'OK', tx, [
          ['Allow', ALLOW],
          ['Accept', 'application/sdp'],
        ]);
      default:
        return this.respond(req, peer, 405, 'Method Not Allowed', tx, [['Allow', ALLOW]]);
    }
  }

  /** Whether `peer` may call (callerAdmission.ts); if not, it is told (401 with a challenge, or 403). */
  private admitted(req: SipRequest, peer: Peer, tx: ServerTransaction): boolean {
    const verdict = callerAdmission(this.opts, peer.address, req.headers.get('authorization'), req.method);
    if (verdict === 'challenge') this.respond(req, peer, 401, 'Unauthorized', tx, [['WWW-Authenticate', this.opts.auth.challenge()]]);
    if (verdict === 'forbidden') this.respond(req, peer, 403, 'Forbidden', tx);
    return verdict === 'admitted';
  }

  private async invite(req: SipRequest, peer: Peer, tx: ServerTransaction): Promise<void> {
    const { calls, log, trusted, inviteLimit } = this.opts;
    // A trunk's own addresses carry every call it routes: only the call limits apply to them.
    if (inviteLimit && !(trusted && contains(trusted, peer.address))) {
      const decision = await inviteLimit(peer.address);
      if (!decision.allowed) return this.respond(req, peer, 503, 'Service Unavailable', tx, [['Retry-After', String(decision.retryAfterSeconds)]]);
    }
    if (!this.admitted(req, peer, tx)) return;
    if (calls.isDraining) return this.respond(req, peer, 503, 'Service Unavailable', tx, [['Retry-After', '5']]);
    const contentType = (req.headers.get('content-type') ?? '').toLowerCase();
    const offer = contentType.startsWith('application/sdp') ? readOffer(req.body.toString('latin1')) : { ok: false as const, reason: 'no SDP offer' };
    if (!offer.ok) return this.respond(req, peer, 488, 'Not Acceptable Here', tx, [['Warning', `304 parley "${offer.reason}"`]]);
    const contact = req.headers.get('contact');
    if (!contact) return this.respond(req, peer, 400, 'Bad Request', tx, [['Warning', '399 parley "no Contact"']]);
    this.respond(req, peer, 100, 'Trying', tx);
    const apiKeyId = await this.opts.owner();
    if (!apiKeyId) {
      log.warn('SIP call refused: no active API key owns SIP calls (create one, or set SIP_API_KEY_ID)');
      return this.respond(req, peer, 503, 'Service Unavailable', tx);
    }
    const transport = await SipTransport.open(this.opts.host, offer.offer);
    const localTag = randomTag();
    const sessionId = Date.now() % 1e9;
    const answer = () => writeAnswer({ sessionId, version: 1, address: this.opts.announcedAddress, rtpPort: transport.rtpPort, rtcpPort: transport.rtcpPort, offer: offer.offer, localCrypto: transport.localCrypto });
    let conversationId: string;
    try {
      ({ conversationId } = await calls.create(
        { apiKeyId, tokenId: randomId('sip_'), endUser: userOf(req.from) || null, session: this.opts.session(), protocol: 'openai' },
        () => ({ transport, accept: async () => answer() }),
      ));
    } catch (err) {
      await transport.close();
      if (err instanceof CallLimitExceeded || err instanceof CallCapacityExceeded) {
        return calls.isDraining ? this.respond(req, peer, 503, 'Service Unavailable', tx, [['Retry-After', '5']]) : this.respond(req, peer, 486, 'Busy Here', tx);
      }
      if (err instanceof TransportRejected) return this.respond(req, peer, 488, 'Not Acceptable Here', tx);
      throw err;
    }
    const call = calls.get(conversationId);
    if (tx.cancelled || !call) {
      void call?.end('cancelled');
      return this.respond(req, peer, 487, 'Request Terminated', tx, [], localTag);
    }
    const dialog: Dialog = {
      conversationId,
      callId: req.callId,
      localTag,
      localUri: withTag(req.to, localTag),
      remoteUri: req.from,
      remoteTarget: uriOf(contact),
      routeSet: req.headers.all('record-route'),
      peer,
      localSeq: 0,
      transport,
      sessionId,
      sdpVersion: 1,
      ended: false,
    };
    const key = dialogKey(req.callId, localTag);
    this.dialogs.set(key, dialog);
    call.observe({ ended: () => void this.forget(dialog) });
    this.respond(req, peer, 180, 'Ringing', tx, [[CALL_ID_HEADER, conversationId]], localTag);
    // A call ended while it rings (hung up through the API, timed out) stops waiting too.
    tx.ringing = new AbortController();
    const ringing = tx.ringing;
    call.observe({ ended: () => ringing.abort() });
    const outcome = await this.opts.routing.route({ callId: conversationId, apiKeyId, sipHeaders: sipHeadersOf(req) }, ringing.signal);
    tx.ringing = undefined;
    this.routed(req, dialog, tx, outcome, answer);
  }

  /** Carries out what became of a ringing call. */
  private routed(req: SipRequest, dialog: Dialog, tx: ServerTransaction, outcome: RouteOutcome, answer: () => string): void {
    const { peer, conversationId, localTag } = dialog;
    const call = this.opts.calls.get(conversationId);
    const log = this.opts.log.child({ conversation: conversationId });
    if (tx.cancelled) {
      void call?.end('cancelled');
      return this.respond(req, peer, 487, 'Request Terminated', tx, [], localTag);
    }
    if (outcome.kind === 'abandoned' || !call) {
      // Ended while it rang: the caller hears it is not available.
      return this.respond(req, peer, 480, 'Temporarily Unavailable', tx, [], localTag);
    }
    if (outcome.kind === 'reject') {
      log.info({ status: outcome.status }, 'SIP call rejected');
      void call.end('rejected');
      return this.respond(req, peer, outcome.status, reasonPhrase(outcome.status), tx, [[CALL_ID_HEADER, conversationId]], localTag);
    }
    if (outcome.kind === 'refer') {
      log.info({ target: outcome.target }, 'SIP call redirected');
      void call.end('referred');
      return this.respond(req, peer, 302, 'Moved Temporarily', tx, [[CALL_ID_HEADER, conversationId], ['Contact', `<${outcome.target}>`]], localTag);
    }
    if (outcome.session) call.updateSession(outcome.session);
    // From now on a call that ends here ends with a BYE (while it rang, a final response said so).
    dialog.transport.bindDialog({ hangUp: () => this.hangUp(dialog) });
    // Answered, it can still be transferred: a REFER inside the dialog.
    this.opts.routing.answered(conversationId, call.apiKeyId, (target) => this.transfer(dialog, target));
    call.observe({ ended: () => this.opts.routing.ended(conversationId) });
    log.info({ transport: peer.transport, from: uriOf(req.from) }, 'SIP call answered');
    this.answer(req, dialog, tx, answer());
  }

  /** 200 OK with our SDP, retransmitted over UDP until its ACK (the call ends without one). */
  private answer(req: SipRequest, dialog: Dialog, tx: ServerTransaction, sdp: string): void {
    const ok = this.response(req, dialog.peer, 200, 'OK', [[CALL_ID_HEADER, dialog.conversationId], ['Contact', this.contact(dialog.peer)], ['Allow', ALLOW], ['Content-Type', 'application/sdp']], dialog.localTag, sdp);
    tx.response = ok;
    tx.final = true;
    this.send(dialog.peer, ok);
    if (dialog.unacked) clearTimeout(dialog.unacked.timer);
    const started = Date.now();
    let interval = T1_MS;
    const retransmit = () => {
      if (Date.now() - started >= TRANSACTION_MS) {
        dialog.unacked = undefined;
        this.opts.log.info({ callId: dialog.callId }, 'SIP call not acknowledged; ending it');
        return void dialog.transport.callerEnded('not_acknowledged');
      }
      if (dialog.peer.transport === 'udp') this.send(dialog.peer, ok);
      interval = Math.min(interval * 2, T2_MS);
      dialog.unacked = { timer: setTimeout(retransmit, interval), cseq: req.cseq.seq };
    };
    dialog.unacked = { timer: setTimeout(retransmit, interval), cseq: req.cseq.seq };
  }

  private ackReceived(req: SipRequest): void {
    const tag = param(req.to, 'tag');
    const dialog = tag ? this.dialogs.get(dialogKey(req.callId, tag)) : undefined;
    // An ACK of a failure response (same transaction) needs nothing: its transaction ends on its own.
    if (!dialog || !dialog.unacked || dialog.unacked.cseq !== req.cseq.seq) return;
    clearTimeout(dialog.unacked.timer);
    dialog.unacked = undefined;
    dialog.transport.confirm();
  }

  private reInvite(req: SipRequest, peer: Peer, tx: ServerTransaction, toTag: string): void {
    const dialog = this.dialogs.get(dialogKey(req.callId, toTag));
    if (!dialog || dialog.ended) return this.respond(req, peer, 481, 'Call/Transaction Does Not Exist', tx);
    let offer: AudioOffer = dialog.transport.currentOffer;
    if (req.body.length) {
      const read = readOffer(req.body.toString('latin1'));
      // A refused re-offer leaves the call as it was (RFC 3261 §14.2); SRTP is not turned on or off mid-call.
      if (!read.ok) return this.respond(req, peer, 488, 'Not Acceptable Here', tx, [['Warning', `304 parley "${read.reason}"`]]);
      if (read.offer.protocol !== offer.protocol) return this.respond(req, peer, 488, 'Not Acceptable Here', tx, [['Warning', `304 parley "the call stays ${offer.protocol}"`]]);
      offer = read.offer;
      dialog.transport.update(offer);
      offer = dialog.transport.currentOffer;
    }
    const contact = req.headers.get('contact');
    if (contact) dialog.remoteTarget = uriOf(contact);
    dialog.sdpVersion++;
    const sdp = writeAnswer({ sessionId: dialog.sessionId, version: dialog.sdpVersion, address: this.opts.announcedAddress, rtpPort: dialog.transport.rtpPort, rtcpPort: dialog.transport.rtcpPort, offer, localCrypto: dialog.transport.localCrypto });
    this.answer(req, dialog, tx, sdp);
  }

  private bye(req: SipRequest, peer: Peer, tx: ServerTransaction, toTag: string | undefined): void {
    const dialog = toTag ? this.dialogs.get(dialogKey(req.callId, toTag)) : undefined;
    if (!dialog || dialog.ended) return this.respond(req, peer, 481, 'Call/Transaction Does Not Exist', tx);
    this.respond(req, peer, 200, 'OK', tx);
    dialog.ended = true;
    if (dialog.unacked) clearTimeout(dialog.unacked.timer);
    dialog.transport.callerEnded('hangup');
  }

  private cancel(req: SipRequest, peer: Peer, tx: ServerTransaction): void {
    const invite = this.transactions.get(`${req.branch}|INVITE`);
    if (!invite || !req.branch) return this.respond(req, peer, 481, 'Call/Transaction Does Not Exist', tx);
    this.respond(req, peer, 200, 'OK', tx);
    // Once answered, a CANCEL changes nothing (the caller sends BYE).
    if (invite.final) return;
    invite.cancelled = true;
    invite.ringing?.abort();
  }

  /** Ends a dialog from our side: BYE, retransmitted over UDP until answered. */
  private hangUp(dialog: Dialog): void {
    if (dialog.ended) return;
    dialog.ended = true;
    if (dialog.unacked) clearTimeout(dialog.unacked.timer);
    this.request(dialog, 'BYE');
  }

  /**
   * Transfers an answered call (RFC 3515): REFER to `target` inside its dialog. The caller (its
   * trunk or PBX) places the call to the target and reports how it went in NOTIFYs; once the target
   * answers, this call ends (notify()). A refused REFER leaves the call as it was.
   */
  private transfer(dialog: Dialog, target: string): void {
    const log = this.opts.log.child({ conversation: dialog.conversationId });
    this.request(dialog, 'REFER', [['Refer-To', `<${target}>`], ['Referred-By', `<sip:parley@${hostPort(this.opts.announcedAddress, this.portOf(dialog.peer))}>`], ['Contact', this.contact(dialog.peer)]], (status) => {
      if (status >= 300) log.warn({ status, target }, 'SIP transfer refused by the caller; the call goes on');
      else log.info({ target }, 'SIP transfer accepted by the caller');
    });
  }

  /** A NOTIFY of a transfer's progress (RFC 3515 §2.4.5): its sipfrag's 2xx means the target answered. */
  private notify(req: SipRequest, peer: Peer, tx: ServerTransaction, toTag: string | undefined): void {
    const dialog = toTag ? this.dialogs.get(dialogKey(req.callId, toTag)) : undefined;
    if (!dialog || dialog.ended) return this.respond(req, peer, 481, 'Call/Transaction Does Not Exist', tx);
    this.respond(req, peer, 200, 'OK', tx);
    const status = Number(/^SIP\/2\.0 (\d{3})/.exec(req.body.toString('latin1'))?.[1]);
    if (status >= 200 && status < 300) {
      this.opts.log.info({ conversation: dialog.conversationId }, 'SIP call transferred');
      void this.opts.calls.get(dialog.conversationId)?.end('referred');
    }
  }

  /** Sends `method` inside `dialog`, retransmitted over UDP until a final response, which `onFinal` is told. */
  private request(dialog: Dialog, method: string, extra: [string, string][] = [], onFinal?: (status: number) => void): void {
    const branch = 'z9hG4bK' + randomBytes(8).toString('hex');
    const via = `SIP/2.0/${dialog.peer.transport.toUpperCase()} ${hostPort(this.opts.announcedAddress, this.portOf(dialog.peer))};branch=${branch};rport`;
    const bytes = writeMessage(`${method} ${dialog.remoteTarget} SIP/2.0`, [
      ['Via', via],
      ['Max-Forwards', '70'],
      ...dialog.routeSet.map((r): [string, string] => ['Route', r]),
      ['From', dialog.localUri],
      ['To', dialog.remoteUri],
      ['Call-ID', dialog.callId],
      ['CSeq', `${++dialog.localSeq} ${method}`],
      ...extra,
    ]);
    this.send(dialog.peer, bytes);
    const pending: { timer?: NodeJS.Timeout; onFinal?: (status: number) => void } = { onFinal };
    this.outgoing.set(branch, pending);
    const started = Date.now();
    let interval = T1_MS;
    const retransmit = () => {
      if (Date.now() - started >= TRANSACTION_MS) return void this.outgoing.delete(branch);
      if (dialog.peer.transport === 'udp') this.send(dialog.peer, bytes);
      interval = Math.min(interval * 2, T2_MS);
      pending.timer = setTimeout(retransmit, interval).unref();
    };
    // Over a stream nothing is resent; the timer only gives up on the answer.
    pending.timer = setTimeout(retransmit, dialog.peer.transport === 'udp' ? interval : TRANSACTION_MS).unref();
  }

  private responseReceived(res: SipResponse): void {
    const pending = this.outgoing.get(res.branch);
    if (!pending || res.status < 200) return;
    clearTimeout(pending.timer);
    this.outgoing.delete(res.branch);
    pending.onFinal?.(res.status);
  }

  /** The call ended: its dialog is kept a transaction's time, for retransmitted BYEs to find. */
  private forget(dialog: Dialog): void {
    if (dialog.unacked) clearTimeout(dialog.unacked.timer);
    dialog.ended = true;
    setTimeout(() => this.dialogs.delete(dialogKey(dialog.callId, dialog.localTag)), TRANSACTION_MS).unref();
  }

  // Responses

  private contact(peer: Peer): string {
    return `<sip:parley@${hostPort(this.opts.announcedAddress, this.portOf(peer))}${peer.transport === 'udp' ? '' : `;transport=${peer.transport}`}>`;
  }

  /** The port of our side of `peer`'s transport. */
  private portOf(peer: Peer): number {
    return peer.transport === 'tls' ? this.listening.tls! : this.listening.udp;
  }

  /** Answers `req` (a To-tag added when given and absent); kept on `tx` for its retransmissions. */
  private respond(req: SipRequest, peer: Peer, status: number, reason: string, tx?: ServerTransaction, extra: [string, string][] = [], toTag?: string, body = ''): void {
    const bytes = this.response(req, peer, status, reason, extra, toTag, body);
    if (tx) {
      tx.response = bytes;
      if (status >= 200) tx.final = true;
    }
    this.send(peer, bytes);
  }

  private response(req: SipRequest, peer: Peer, status: number, reason: string, extra: [string, string][], toTag: string | undefined, body: string): Buffer {
    const vias = req.headers.all('via');
    // RFC 3581: the caller asked where its request came from (it is behind NAT).
    if (vias[0] && /;\s*rport(?=;|$)/.test(vias[0])) vias[0] = vias[0].replace(/;\s*rport(?=;|$)/, `;rport=${peer.port}`) + `;received=${peer.address}`;
    const to = toTag && !param(req.to, 'tag') && status > 100 ? withTag(req.to, toTag) : req.to;
    return writeMessage(
      `SIP/2.0 ${status} ${reason}`,
      [...vias.map((v): [string, string] => ['Via', v]), ['From', req.from], ['To', to], ['Call-ID', req.callId], ['CSeq', `${req.cseq.seq} ${req.cseq.method}`], ['Server', 'Parley'], ...extra],
      body,
    );
  }
}

/** Standard reason phrases of the statuses an app rejects with most; others get a generic one. */
const REASONS: Record<number, string> = {
  403: 'Forbidden',
  404: 'Not Found',
  480: 'Temporarily Unavailable',
  486: 'Busy Here',
  488: 'Not Acceptable Here',
  500: 'Server Internal Error',
  503: 'Service Unavailable',
  600: 'Busy Everywhere',
  603: 'Decline',
  604: 'Does Not Exist Anywhere',
};

function reasonPhrase(status: number): string {
  return REASONS[status] ?? (status >= 600 ? 'Global Failure' : status >= 500 ? 'Server Error' : 'Request Failed');
}

/** Header names as they are usually written (we keep them lower-cased). */
const SPELLINGS: Record<string, string> = { 'call-id': 'Call-ID', cseq: 'CSeq', 'www-authenticate': 'WWW-Authenticate' };

/** Credentials the caller sent us: not passed on to the app. */
const WITHHELD = new Set(['authorization', 'proxy-authorization']);

function sipHeadersOf(req: SipRequest): { name: string; value: string }[] {
  return req.headers.entries.filter(([name]) => !WITHHELD.has(name)).map(([name, value]) => ({
    name: SPELLINGS[name] ?? name.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase()),
    value,
  }));
}

function transactionKey(req: SipRequest): string {
  // RFC 2543 peers have no branch: the dialog and sequence name the transaction.
  const id = req.branch.startsWith('z9hG4bK') ? req.branch : `${req.callId}|${req.from}|${req.cseq.seq}`;
  return `${id}|${req.method}`;
}

const dialogKey = (callId: string, localTag: string) => `${callId}|${localTag}`;

const randomTag = () => randomBytes(6).toString('hex');

function withTag(header: string, tag: string): string {
  return `${header};tag=${tag}`;
}

function hostPort(address: string, port: number): string {
  return `${address.includes(':') ? `[${address}]` : address}:${port}`;
}

