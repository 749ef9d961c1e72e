// The SIP door's surroundings in-process, for unit tests of its client half (the INVITE client
// transaction, the UAC core, the dialogs) on mocked timers, as SIP.js's test/support fakes are for
// its core: a wire that keeps what is sent, parsed; a callee's responses written from the request
// they answer; a core, a call and an RTP transport that record what they are told.
import assert from 'node:assert/strict';
import type { SipTransport } from '../../src/calls/sip/sipTransport.ts';
import type { SipCore } from '../../src/sip/core.ts';
import type { Peer } from '../../src/sip/listener.ts';
import { parseMessage, type SipMessage, type SipRequest, type SipResponse } from '../../src/sip/message.ts';
import type { SipServerOptions } from '../../src/sip/options.ts';
import { responseTo } from '../../src/sip/responses.ts';

/** The callee (or the trunk) our requests go to. */
export const CALLEE: Peer = { transport: 'udp', address: '192.0.2.20', port: 5060 };
/** The same over TCP. */
export const CALLEE_TCP: Peer = { transport: 'tcp', address: '192.0.2.20', port: 5060, connection: 1 };

/** What went out, parsed, in order. */
export class FakeWire {
  readonly sent: { peer: Peer; message: SipMessage }[] = [];

  readonly send = (peer: Peer, bytes: Buffer): void => {
    const parsed = parseMessage(bytes);
    assert.ok(parsed.ok, `we sent an unreadable message: ${parsed.ok ? '' : parsed.error}\n${bytes.toString()}`);
    this.sent.push({ peer, message: parsed.message });
  };

  /** The requests sent (of `method`), in order. */
  requests(method?: string): SipRequest[] {
    return this.sent.map((s) => s.message).filter((m): m is SipRequest => m.kind === 'request' && (!method || m.method === method));
  }

  /** What was sent, as `METHOD` or `STATUS`, in order. */
  get summary(): string[] {
    return this.sent.map(({ message: m }) => (m.kind === 'request' ? m.method : String(m.status)));
  }

  /** The last request of `method`. */
  last(method: string): SipRequest {
    const requests = this.requests(method);
    assert.ok(requests.length, `no ${method} was sent (sent: ${this.summary.join(', ')})`);
    return requests.at(-1)!;
  }
}

/** A callee's response of `status` to `req`: its To tagged `toTag` (beyond 100), with `headers` and `body`. */
export function responseOf(req: SipRequest, status: number, opts: { toTag?: string; headers?: string[]; body?: string } = {}): SipResponse {
  const body = opts.body ?? '';
  const text = [
    `SIP/2.0 ${status} Status ${status}`,
    ...req.headers.all('via').map((v) => `Via: ${v}`),
    `From: ${req.from}`,
    `To: ${req.to}${opts.toTag && status > 100 ? `;tag=${opts.toTag}` : ''}`,
    `Call-ID: ${req.callId}`,
    `CSeq: ${req.headers.get('cseq')}`,
    ...(opts.headers ?? []),
    `Content-Length: ${Buffer.byteLength(body)}`,
    '',
    body,
  ].join('\r\n');
  const parsed = parseMessage(Buffer.from(text));
  assert.ok(parsed.ok && parsed.message.kind === 'response', parsed.ok ? 'not a response' : parsed.error);
  return parsed.message;
}

/** A logger that keeps each line as `level: message`. */
export function fakeLog(lines: string[] = []): SipServerOptions['log'] {
  const log = {
    lines,
    child: () => log,
    ...Object.fromEntries(['trace', 'debug', 'info', 'warn', 'error', 'fatal'].map((level) => [level, (...args: unknown[]) => void lines.push(`${level}: ${args.find((a) => typeof a === 'string') ?? ''}`)])),
  };
  return log as unknown as SipServerOptions['log'];
}

/** A core whose sends go to `wire`, announcing 192.0.2.10:5060. */
export function fakeCore(wire: FakeWire, log: string[] = []): SipCore {
  return {
    opts: { announcedAddress: '192.0.2.10', log: fakeLog(log) } as unknown as SipServerOptions,
    respond(req, peer, status, reason, tx, extra, toTag, body) {
      const bytes = responseTo(req, peer, status, reason, extra, toTag, body);
      if (tx) tx.respond(status, bytes);
      else wire.send(peer, bytes);
    },
    send: wire.send,
    hostPortFor: () => '192.0.2.10:5060',
    contact: () => '<sip:parley@192.0.2.10:5060>',
  };
}

/** A call's RTP transport as the SIP door sees it: it records what it is told. */
export function fakeSipTransport(told: string[] = []): SipTransport & { told: string[] } {
  const transport = {
    told,
    rtpPort: 40_000,
    rtcpPort: 40_001,
    sipStatus: undefined as number | undefined,
    localCrypto: undefined,
    negotiated: (offer: { codec: string }) => void told.push(`negotiated ${offer.codec}`),
    confirm: () => void told.push('confirm'),
    callerEnded: (reason: string) => void told.push(`callerEnded ${reason}`),
    bindDialog: () => void told.push('bindDialog'),
  };
  return transport as unknown as SipTransport & { told: string[] };
}

/** A call that can be ended, telling its observers. */
export function fakeCall() {
  const observers: { ended?: () => void }[] = [];
  return {
    observe: (observer: { ended?: () => void }) => void observers.push(observer),
    end: () => {
      for (const o of observers) o.ended?.();
    },
  };
}
