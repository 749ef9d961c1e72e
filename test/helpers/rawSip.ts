// SIP written by hand, for the tests and benchmarks that talk to Parley's SIP door the way a minimal
// or misbehaving client would (raw UDP and TCP on loopback): a request, a digest answer, a status.
import { createHash, randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';

export interface SipRequestOptions {
  /** The Via's transport and sent-by, e.g. `UDP 127.0.0.1:5999` (the Contact names the same place). */
  via?: string;
  /** The caller's user name (From, Contact). */
  user?: string;
  body?: string;
  headers?: string[];
  /** The To tag of a request inside a dialog. */
  toTag?: string;
}

/** A request to the agent at 127.0.0.1:`sipPort`, with a fresh branch, From tag and Call-ID. */
export function sipRequest(sipPort: number, method: string, opts: SipRequestOptions = {}): string {
  const { via = 'UDP 127.0.0.1:5999', user = 'alice', body = '', headers = [] } = opts;
  return [
    `${method} sip:agent@127.0.0.1:${sipPort} SIP/2.0`,
    `Via: SIP/2.0/${via};branch=z9hG4bK${randomBytes(6).toString('hex')};rport`,
    'Max-Forwards: 70',
    `From: <sip:${user}@127.0.0.1>;tag=${randomBytes(4).toString('hex')}`,
    `To: <sip:agent@127.0.0.1>${opts.toTag ? `;tag=${opts.toTag}` : ''}`,
    `Call-ID: ${randomBytes(8).toString('hex')}`,
    `CSeq: 1 ${method}`,
    `Contact: <sip:${user}@${via.split(' ')[1]}>`,
    ...headers,
    ...(body ? ['Content-Type: application/sdp'] : []),
    `Content-Length: ${Buffer.byteLength(body)}`,
    '',
    body,
  ].join('\r\n');
}

const md5 = (s: string) => createHash('md5').update(s).digest('hex');

/** An Authorization header answering the digest challenge in `challenge` (a 401) for `method`. */
export function digestAuthorization(sipPort: number, challenge: string, user: string, password: string, method = 'INVITE'): string {
  const nonce = /nonce="([^"]+)"/.exec(challenge)![1]!;
  const uri = `sip:agent@127.0.0.1:${sipPort}`;
  const response = md5(`${md5(`${user}:parley:${password}`)}:${nonce}:00000001:abc:auth:${md5(`${method}:${uri}`)}`);
  return `Authorization: Digest username="${user}", realm="parley", nonce="${nonce}", uri="${uri}", response="${response}", algorithm=MD5, qop=auth, nc=00000001, cnonce="abc"`;
}

/** The status code of a response, or undefined for none. */
export const sipStatus = (answer: string | undefined): number | undefined => (answer ? Number(/^SIP\/2\.0 (\d{3})/.exec(answer)?.[1]) : undefined);

/** SDP offers: G.711 µ-law, which Parley speaks, and G.729 alone, which it does not. */
export const G711_OFFER = 'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 40000 RTP/AVP 0\r\n';
export const G729_ONLY_OFFER = 'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 40000 RTP/AVP 18\r\na=rtpmap:18 G729/8000\r\n';

/** A SIP peer on a UDP socket of its own on loopback: what it hears, in order, and a way to send to Parley. */
export interface UdpPeer {
  port: number;
  /** Every message received, in order of arrival. */
  heard: string[];
  send(text: string | Buffer): void;
  /** The first message heard that matches `pattern` (waits for it). */
  next(what: string, pattern: RegExp, timeoutMs?: number): Promise<string>;
  close(): void;
}

export async function udpPeer(sipPort: number, onMessage?: (text: string, peer: UdpPeer) => void): Promise<UdpPeer> {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
  const heard: string[] = [];
  const waiters = new Set<() => void>();
  const peer: UdpPeer = {
    port: socket.address().port,
    heard,
    send: (text) => socket.send(text, sipPort, '127.0.0.1'),
    next: (what, pattern, timeoutMs = 30_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const found = heard.find((m) => pattern.test(m));
          if (found === undefined) return false;
          clearTimeout(timer);
          waiters.delete(check as () => void);
          resolve(found);
          return true;
        };
        const timer = setTimeout(() => {
          waiters.delete(check as () => void);
          reject(new Error(`timed out waiting for ${what}; heard: ${JSON.stringify(heard.map((m) => m.split('\r\n')[0]))}`));
        }, timeoutMs);
        if (!check()) waiters.add(check as () => void);
      }),
    close: () => socket.close(),
  };
  socket.on('message', (m) => {
    const text = m.toString('latin1');
    heard.push(text);
    onMessage?.(text, peer);
    for (const waiter of [...waiters]) waiter();
  });
  return peer;
}
