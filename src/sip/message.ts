// SIP messages (RFC 3261 §7): parsed from a datagram or a stream and written back. Parsing never
// throws: anything malformed reads as an error string, and the server answers 400 or drops it.
// Only what a user agent server needs is interpreted; other headers are kept as they came.

/** The largest message read: a trunk's INVITE with a long SDP is a few kilobytes. */
export const MAX_MESSAGE_BYTES = 16 * 1024;

/** Compact header forms (RFC 3261 §7.3.3) → their full names, lower-case. */
const COMPACT: Record<string, string> = {
  i: 'call-id',
  m: 'contact',
  e: 'content-encoding',
  l: 'content-length',
  c: 'content-type',
  f: 'from',
  s: 'subject',
  k: 'supported',
  t: 'to',
  v: 'via',
};

/** Headers that may hold several comma-separated values in one line, split on reading. */
const LIST_HEADERS = new Set(['via', 'record-route', 'route', 'contact']);

export class SipHeaders {
  /** [lower-case name, value], in order. */
  readonly entries: [string, string][] = [];

  get(name: string): string | undefined {
    const key = name.toLowerCase();
    return this.entries.find(([n]) => n === key)?.[1];
  }

  all(name: string): string[] {
    const key = name.toLowerCase();
    return this.entries.filter(([n]) => n === key).map(([, v]) => v);
  }

  add(name: string, value: string): this {
    this.entries.push([name.toLowerCase(), value]);
    return this;
  }
}

interface SipCommon {
  headers: SipHeaders;
  body: Buffer;
  /** The mandatory headers, read: */
  callId: string;
  cseq: { seq: number; method: string };
  from: string;
  to: string;
  /** The top Via's branch parameter ('' when absent: an RFC 2543 peer). */
  branch: string;
}

export interface SipRequest extends SipCommon {
  kind: 'request';
  method: string;
  uri: string;
}

export interface SipResponse extends SipCommon {
  kind: 'response';
  status: number;
  reason: string;
}

export type SipMessage = SipRequest | SipResponse;

/** A failure may carry the request as far as it was read, enough to answer it 400. */
export type Parsed = { ok: true; message: SipMessage } | { ok: false; error: string; partial?: SipRequest };

const TOKEN = /^[A-Za-z0-9.!%*_+`'~-]+$/;

/** Reads one whole message (a datagram, or one framed by `frame`). */
export function parseMessage(bytes: Buffer): Parsed {
  if (bytes.length > MAX_MESSAGE_BYTES) return { ok: false, error: 'message too large' };
  const end = bytes.indexOf('\r\n\r\n');
  if (end < 0) return { ok: false, error: 'no end of headers' };
  const head = bytes.subarray(0, end).toString('latin1');
  const lines = head.split('\r\n');
  const start = lines.shift() ?? '';
  const headers = new SipHeaders();
  for (const line of lines) {
    if (/^[ \t]/.test(line)) {
      // A folded line continues the previous header.
      const last = headers.entries[headers.entries.length - 1];
      if (!last) return { ok: false, error: 'folded line before any header' };
      last[1] += ' ' + line.trim();
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0) return { ok: false, error: 'header line without a name' };
    const raw = line.slice(0, colon).trim();
    if (!TOKEN.test(raw)) return { ok: false, error: 'bad header name' };
    const name = COMPACT[raw.toLowerCase()] ?? raw.toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (LIST_HEADERS.has(name)) for (const part of splitList(value)) headers.add(name, part);
    else headers.add(name, value);
  }
  let body = bytes.subarray(end + 4);
  const length = headers.get('content-length');
  if (length !== undefined) {
    if (!/^\d{1,6}$/.test(length)) return { ok: false, error: 'bad Content-Length' };
    const n = Number(length);
    if (n > body.length) return { ok: false, error: 'body shorter than Content-Length' };
    body = body.subarray(0, n);
  }
  const common = readCommon(headers, body);
  const request = /^([A-Za-z]+) (\S+) SIP\/2\.0$/.exec(start);
  if (request) {
    // Without its mandatory headers a request cannot even be answered: it is dropped.
    if (!common.ok) return { ok: false, error: common.error };
    const message: SipRequest = { kind: 'request', method: request[1]!, uri: request[2]!, ...common.value };
    if (common.value.cseq.method !== message.method && message.method !== 'ACK' && message.method !== 'CANCEL') return { ok: false, error: 'CSeq method differs from the request method', partial: message };
    return { ok: true, message };
  }
  const response = /^SIP\/2\.0 ([1-6]\d\d) ?(.*)$/.exec(start);
  if (response) {
    if (!common.ok) return { ok: false, error: common.error };
    return { ok: true, message: { kind: 'response', status: Number(response[1]), reason: response[2] ?? '', ...common.value } };
  }
  return { ok: false, error: 'bad start line' };
}

function readCommon(headers: SipHeaders, body: Buffer): { ok: true; value: SipCommon } | { ok: false; error: string } {
  const via = headers.get('via');
  const callId = headers.get('call-id');
  const cseqText = headers.get('cseq');
  const from = headers.get('from');
  const to = headers.get('to');
  if (!via || !callId || !cseqText || !from || !to) return { ok: false, error: 'missing Via, Call-ID, CSeq, From or To' };
  const cseq = /^(\d{1,10})\s+([A-Za-z]+)$/.exec(cseqText);
  if (!cseq || Number(cseq[1]) > 2 ** 31 - 1) return { ok: false, error: 'bad CSeq' };
  if (!/^SIP\/2\.0\/[A-Za-z]+\s+\S/.test(via)) return { ok: false, error: 'bad Via' };
  return { ok: true, value: { headers, body, callId, cseq: { seq: Number(cseq[1]), method: cseq[2]! }, from, to, branch: param(via, 'branch') ?? '' } };
}

/** Splits a header value on the commas between its values (not those inside quotes or <>). */
function splitList(value: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quoted = false;
  let start = 0;
  for (let i = 0; i < value.length; i++) {
    const ch = value[i];
    if (ch === '"' && value[i - 1] !== '\\') quoted = !quoted;
    else if (!quoted && ch === '<') depth++;
    else if (!quoted && ch === '>') depth = Math.max(0, depth - 1);
    else if (!quoted && depth === 0 && ch === ',') {
      parts.push(value.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(value.slice(start).trim());
  return parts.filter(Boolean);
}

/** A `;name=value` parameter of a header value (outside its <uri>), or undefined. */
export function param(value: string, name: string): string | undefined {
  const close = value.lastIndexOf('>');
  const params = close >= 0 ? value.slice(close + 1) : value;
  const m = new RegExp(`;\\s*${name}\\s*=\\s*("[^"]*"|[^;,\\s]+)`, 'i').exec(params);
  return m?.[1]?.replace(/^"|"$/g, '');
}

/** The URI of a name-addr or addr-spec (`"Bob" <sip:bob@host>;tag=1` → sip:bob@host). */
export function uriOf(value: string): string {
  const m = /<([^>]*)>/.exec(value);
  return (m ? m[1]! : value.split(';')[0]!).trim();
}

/** The user part of a SIP URI, or ''. */
export function userOf(uri: string): string {
  return /^sips?:([^@;>]+)@/.exec(uriOf(uri))?.[1] ?? '';
}

/** A request or response as bytes; Content-Length is always written from the body. */
export function writeMessage(startLine: string, headers: [string, string][], body: Buffer | string = ''): Buffer {
  const payload = typeof body === 'string' ? Buffer.from(body) : body;
  const lines = [startLine, ...headers.filter(([n]) => n.toLowerCase() !== 'content-length').map(([n, v]) => `${n}: ${v}`), `Content-Length: ${payload.length}`];
  return Buffer.concat([Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1'), payload]);
}

export type Framed = { kind: 'message'; bytes: Buffer; rest: Buffer } | { kind: 'keepalive'; rest: Buffer } | { kind: 'incomplete' } | { kind: 'invalid'; error: string };

/** The next message of a stream (TCP): whole once its Content-Length of body has arrived. */
export function frame(buffer: Buffer): Framed {
  // CRLF keep-alives (RFC 5626) between messages.
  if (buffer.length >= 4 && buffer.subarray(0, 4).toString('latin1') === '\r\n\r\n') return { kind: 'keepalive', rest: buffer.subarray(4) };
  let at = 0;
  while (at < buffer.length && (buffer[at] === 0x0d || buffer[at] === 0x0a)) at++;
  if (at > 0) return { kind: 'keepalive', rest: buffer.subarray(at) };
  const end = buffer.indexOf('\r\n\r\n');
  if (end < 0) return buffer.length > MAX_MESSAGE_BYTES ? { kind: 'invalid', error: 'headers too large' } : { kind: 'incomplete' };
  const head = buffer.subarray(0, end).toString('latin1');
  const m = /\r\n(?:content-length|l)[ \t]*:[ \t]*(\d{1,6})[ \t]*(?=\r\n|$)/i.exec('\r\n' + head);
  // Over a stream, Content-Length is mandatory (RFC 3261 §18.3).
  if (!m) return { kind: 'invalid', error: 'no Content-Length' };
  const total = end + 4 + Number(m[1]);
  if (total > MAX_MESSAGE_BYTES) return { kind: 'invalid', error: 'message too large' };
  if (buffer.length < total) return { kind: 'incomplete' };
  return { kind: 'message', bytes: buffer.subarray(0, total), rest: buffer.subarray(total) };
}
