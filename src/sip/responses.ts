// The responses we write: the request's Via (with where it came from, RFC 3581), its Record-Route
// in a dialog's responses, From, To (with our tag once there is a dialog), Call-ID and CSeq, and
// the reason phrases of the statuses we send.
import { randomBytes } from 'node:crypto';
import type { Peer } from './listener.js';
import { param, writeMessage, type SipRequest } from './message.js';

export type Headers = [string, string][];

/** The response of `status` to `req` from `peer`; `toTag` is added to its To when given and absent. */
export function responseTo(req: SipRequest, peer: Peer, status: number, reason: string, extra: Headers = [], toTag?: string, body = ''): Buffer {
  const vias = req.headers.all('via');
  // RFC 3581: the caller asked where its request came from (it is behind NAT).
  if (vias[0] && /;\s*rport(?=;|$)/.test(vias[0])) vias[0] = vias[0].replace(/;\s*rport(?=;|$)/, `;rport=${peer.port}`) + `;received=${peer.address}`;
  const to = toTag && !param(req.to, 'tag') && status > 100 ? withTag(req.to, toTag) : req.to;
  // A response that makes or confirms a dialog carries the proxies' Record-Route back (RFC 3261
  // §12.1.1): the caller's route set, so its ACK, BYE and re-INVITEs pass through them as ours do.
  const recordRoutes = status > 100 && status < 300 ? req.headers.all('record-route').map((r): [string, string] => ['Record-Route', r]) : [];
  // From, To, Call-ID and CSeq as they came (a malformed request answered 400 may lack some).
  const echoed: Headers = [];
  if (req.from) echoed.push(['From', req.from]);
  if (to) echoed.push(['To', to]);
  if (req.callId) echoed.push(['Call-ID', req.callId]);
  echoed.push(['CSeq', req.headers.get('cseq') ?? '']);
  return writeMessage(`SIP/2.0 ${status} ${reason}`, [...vias.map((v): [string, string] => ['Via', v]), ...recordRoutes, ...echoed, ['Server', 'Parley'], ...extra], body);
}

/** Standard reason phrases of the statuses an app rejects with most; others get a generic one. */
const REASONS: Record<number, string> = {
  400: 'Bad Request',
  403: 'Forbidden',
  404: 'Not Found',
  480: 'Temporarily Unavailable',
  486: 'Busy Here',
  488: 'Not Acceptable Here',
  500: 'Server Internal Error',
  503: 'Service Unavailable',
  505: 'Version Not Supported',
  600: 'Busy Everywhere',
  603: 'Decline',
  604: 'Does Not Exist Anywhere',
};

export function reasonPhrase(status: number): string {
  return REASONS[status] ?? (status >= 600 ? 'Global Failure' : status >= 500 ? 'Server Error' : 'Request Failed');
}

export const randomTag = () => randomBytes(6).toString('hex');

/** A Via branch of ours: RFC 3261's magic cookie, then enough randomness to be unique (§8.1.1.7). */
export const newBranch = () => 'z9hG4bK' + randomBytes(8).toString('hex');

export function withTag(header: string, tag: string): string {
  return `${header};tag=${tag}`;
}

export function hostPort(address: string, port: number): string {
  return `${address.includes(':') ? `[${address}]` : address}:${port}`;
}
