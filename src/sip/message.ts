// SIP messages (RFC 3261 §7): parsed from a datagram or a stream and written back. Parsing never
// throws: anything malformed reads as an error string, and the server answers 400 (505 for another
// SIP version) or, when it cannot be answered, drops it. A request's start line and the headers its
// handling relies on are held to the grammar (headerSyntax.ts; RFC 4475's malformed messages are
// refused); other headers are kept as they came.
import { TOKEN_CHARS, addressProblem, quotedEnd, viaProblem } from './headerSyntax.js';

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

/**
 * A failure may carry the request as far as it was read, enough to answer it (`status`: 400, or 505
 * for another SIP version): a request with a Via and a CSeq can be answered whatever else is wrong.
 */
export type Parsed = { ok: true; message: SipMessage } | { ok: false; error: string; partial?: SipRequest; status?: number };

const TOKEN = new RegExp(`^[${TOKEN_CHARS}]+$`);
/** Header fields a message carries once at most (RFC 3261 §7.3: only list headers may repeat). */
const SINGLE = ['call-id', 'cseq', 'from', 'to', 'max-forwards', 'content-length', 'content-type'];

/** Reads one whole message (a datagram, or one framed by `frame`). */
export function parseMessage(bytes: Buffer): Parsed {
  if (bytes.length > MAX_MESSAGE_BYTES) return { ok: false, error: 'message too large' };
  const end = bytes.indexOf('\r\n\r\n');
  if (end < 0) return { ok: false, error: 'no end of headers' };
  const [start = '', ...rest] = bytes.subarray(0, end).toString('latin1').split('\r\n');
  const headers = new SipHeaders();
  /** What makes the message malformed; the first is told. */
  const problems: string[] = [];
  // A line starting with a space or tab continues the one before (folding, §7.3.1).
  const lines: string[] = [];
  for (const line of rest) {
    if (/^[ \t]/.test(line) && lines.length) lines[lines.length - 1] += ' ' + line.trim();
    else lines.push(line);
  }
  for (const line of lines) {
    const colon = line.indexOf(':');
    const raw = colon < 0 ? '' : line.slice(0, colon).trim();
    if (!TOKEN.test(raw)) {
      problems.push(colon <= 0 || /^[ \t]/.test(line) ? 'a header line without a name' : 'a bad header name');
      continue;
    }
    const name = COMPACT[raw.toLowerCase()] ?? raw.toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (!LIST_HEADERS.has(name)) headers.add(name, value);
    else {
      const parts = splitList(value);
      if (parts.some((p) => !p)) problems.push(`an empty value in ${name}`);
      for (const part of parts) if (part) headers.add(name, part);
    }
  }
  let body = bytes.subarray(end + 4);
  const length = headers.get('content-length');
  if (length !== undefined) {
    if (!/^\d{1,6}$/.test(length)) problems.push('a bad Content-Length');
    else if (Number(length) > body.length) problems.push('a body shorter than its Content-Length');
    else body = body.subarray(0, Number(length));
  }
  const common = readCommon(headers, body, problems);
  const response = /^SIP\/2\.0 ([1-6]\d\d)(?: (.*))?$/.exec(start);
  if (response) {
    // A response is only read (never answered): what we need of it must be there.
    if (!common || common.problem) return { ok: false, error: common?.problem ?? 'missing Via or CSeq' };
    return { ok: true, message: { kind: 'response', status: Number(response[1]), reason: response[2] ?? '', ...common.value } };
  }
  const request = readRequestLine(start);
  if (!request) return { ok: false, error: 'bad start line' };
  // Without a Via and a CSeq a request cannot even be answered: it is dropped.
  if (!common) return { ok: false, error: 'missing Via or CSeq' };
  const message: SipRequest = { kind: 'request', method: request.method, uri: request.uri, ...common.value };
  if (request.problem) return { ok: false, error: request.problem, partial: message, status: request.status };
  problems.push(...requestProblems(message));
  if (common.problem) problems.unshift(common.problem);
  if (problems.length) return { ok: false, error: problems[0]!, partial: message, status: 400 };
  return { ok: true, message };
}

/**
 * A request line: method SP Request-URI SP SIP-Version, single spaces (RFC 4475 §3.1.2.9-10: extra
 * ones may be refused, and are). A line that ends in another version is one to answer 505.
 */
function readRequestLine(line: string): { method: string; uri: string; problem?: string; status?: number } | undefined {
  const m = /^(\S+) (\S+) SIP\/2\.0$/.exec(line);
  if (m && TOKEN.test(m[1]!)) {
    const uri = m[2]!;
    if (!/^[A-Za-z][A-Za-z0-9+.-]*:[^<>"]+$/.test(uri)) return { method: m[1]!, uri, problem: 'a malformed Request-URI', status: 400 };
    // Headers (`?…` after the host) are not allowed in a Request-URI (§19.1.1; RFC 4475 §3.1.2.11).
    if (/^sips?:/i.test(uri) && uri.slice(uri.lastIndexOf('@') + 1).includes('?')) return { method: m[1]!, uri, problem: 'headers in the Request-URI', status: 400 };
    return { method: m[1]!, uri };
  }
  const loose = /^(\S+)\s+(.*?)\s*SIP\/(\d+\.\d+)\s*$/.exec(line);
  if (!loose || !TOKEN.test(loose[1]!)) return undefined;
  if (loose[3] !== '2.0') return { method: loose[1]!, uri: loose[2]!, problem: `SIP/${loose[3]} is not supported`, status: 505 };
  return { method: loose[1]!, uri: loose[2]!, problem: 'a malformed request line', status: 400 };
}

/** What is wrong with a request's headers, by the grammar its handling relies on. */
function requestProblems(req: SipRequest): string[] {
  const problems: string[] = [];
  for (const name of ['call-id', 'from', 'to']) if (!req.headers.get(name)) problems.push(`no ${name}`);
  for (const name of SINGLE) if (req.headers.all(name).length > 1) problems.push(`several ${name} headers`);
  if (req.cseq.method !== req.method && req.method !== 'ACK' && req.method !== 'CANCEL') problems.push('CSeq method differs from the request method');
  for (const via of req.headers.all('via')) {
    const problem = viaProblem(via);
    if (problem) problems.push(problem);
  }
  const addresses: [string, boolean][] = [
    ['from', false],
    ['to', false],
    ['contact', false],
    ['route', true],
    ['record-route', true],
  ];
  for (const [name, nameAddrOnly] of addresses) {
    for (const value of req.headers.all(name)) {
      if (name === 'contact' && value === '*') continue;
      const problem = addressProblem(value, nameAddrOnly);
      if (problem) problems.push(`${problem} in ${name}`);
    }
  }
  return problems;
}

/** The headers every message needs read; undefined when there is no Via or CSeq to answer with. */
function readCommon(headers: SipHeaders, body: Buffer, problems: string[]): { value: SipCommon; problem?: string } | undefined {
  const via = headers.get('via');
  const cseqText = headers.get('cseq');
  if (!via || !cseqText) return undefined;
  const cseq = new RegExp(`^(\\d{1,10})\\s+([${TOKEN_CHARS}]+)$`).exec(cseqText);
  const bad = !cseq || Number(cseq[1]) > 2 ** 31 - 1 ? 'a bad CSeq' : undefined;
  const value: SipCommon = {
    headers,
    body,
    callId: headers.get('call-id') ?? '',
    cseq: bad ? { seq: -1, method: '' } : { seq: Number(cseq![1]), method: cseq![2]! },
    from: headers.get('from') ?? '',
    to: headers.get('to') ?? '',
    branch: param(via, 'branch') ?? '',
  };
  const problem = bad ?? problems[0] ?? (!/^SIP\s*\/\s*\d+\.\d+\s*\/\s*\S+\s+\S/.test(via) ? 'a bad Via' : undefined);
  return { value, problem };
}

/** Splits a header value on the commas between its values (not those inside quotes or <>). */
function splitList(value: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < value.length; i++) {
    const ch = value[i];
    if (ch === '"') {
      const close = quotedEnd(value, i);
      if (close < 0) break;
      i = close;
    } else if (ch === '<') depth++;
    else if (ch === '>') depth = Math.max(0, depth - 1);
    else if (depth === 0 && ch === ',') {
      parts.push(value.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(value.slice(start).trim());
  return value.trim() ? parts : [];
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
  const lengths = [...('\r\n' + head).matchAll(/\r\n(?:content-length|l)[ \t]*:[ \t]*([^\r]*)/gi)];
  // Over a stream, Content-Length is mandatory (RFC 3261 §18.3), and one we cannot trust (negative,
  // not a number, given twice: RFC 4475 §3.1.2.3, §3.3.9) leaves no way to find the next message.
  if (lengths.length !== 1) return { kind: 'invalid', error: lengths.length ? 'several Content-Length headers' : 'no Content-Length' };
  const m = /^(\d{1,6})[ \t]*$/.exec(lengths[0]![1]!);
  if (!m) return { kind: 'invalid', error: 'a bad Content-Length' };
  const total = end + 4 + Number(m[1]);
  if (total > MAX_MESSAGE_BYTES) return { kind: 'invalid', error: 'message too large' };
  if (buffer.length < total) return { kind: 'incomplete' };
  return { kind: 'message', bytes: buffer.subarray(0, total), rest: buffer.subarray(total) };
}
