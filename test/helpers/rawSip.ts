// SIP written by hand, for the tests and benchmarks that talk to Parley's SIP door the way a minimal
// or misbehaving client would (raw UDP and TCP on loopback): a request, a digest answer, a status,
// and a UDP socket of a loopback address of its own (every 127.x address reaches loopback) that
// awaits its requests' final answers.
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
  /** The Call-ID (default: a fresh one) and CSeq number (default 1): a request answering a challenge repeats its Call-ID with the next CSeq. */
  callId?: string;
  cseq?: number;
  /** The user in To (default `agent`; a REGISTER names its own user there). */
  toUser?: string;
}

/** A request to the agent at 127.0.0.1:`sipPort`, with a fresh branch, From tag and Call-ID. */
export function sipRequest(sipPort: number, method: string, opts: SipRequestOptions = {}): string {
  const { via = 'UDP 127.0.0.1:5999', user = 'alice', body = '', headers = [] } = opts;
  return [
    `${method} sip:agent@127.0.0.1:${sipPort} SIP/2.0`,
    `Via: SIP/2.0/${via};branch=z9hG4bK${randomBytes(6).toString('hex')};rport`,
    'Max-Forwards: 70',
    `From: <sip:${user}@127.0.0.1>;tag=${randomBytes(4).toString('hex')}`,
    `To: <sip:${opts.toUser ?? 'agent'}@127.0.0.1>${opts.toTag ? `;tag=${opts.toTag}` : ''}`,
    `Call-ID: ${opts.callId ?? randomBytes(8).toString('hex')}`,
    `CSeq: ${opts.cseq ?? 1} ${method}`,
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

/** A UDP socket on `address` whose requests to 127.0.0.1:`sipPort` are answered to it. */
export interface SipSocket {
  port: number;
  /** The Via's transport and sent-by for its requests (`UDP address:port`). */
  via: string;
  /** Sends `text` and resolves with its final answer (matched by Call-ID and CSeq), or undefined after `waitMs`. */
  exchange(text: string, waitMs?: number): Promise<string | undefined>;
  /**
   * `make`'s request sent, and when challenged (401) sent again with the next CSeq, the same Call-ID
   * and an answer to the challenge as `user` with `password`: resolves with both final answers.
   */
  authenticated(make: (opts: Pick<SipRequestOptions, 'callId' | 'cseq' | 'headers'>) => string, user: string, password: string, method?: string): Promise<{ challenge: string | undefined; answer: string | undefined }>;
  close(): void;
}

export async function sipSocket(sipPort: number, address = '127.0.0.1'): Promise<SipSocket> {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, address, () => resolve()));
  const waiting = new Map<string, (answer: string) => void>();
  const keyOf = (text: string) => `${/\r\nCall-ID: *(\S+)/i.exec(text)?.[1]} ${/\r\nCSeq: *(\d+)/i.exec(text)?.[1]}`;
  socket.on('message', (m) => {
    const text = m.toString('latin1');
    if (!/^SIP\/2\.0 [2-6]\d\d /.test(text)) return;
    waiting.get(keyOf(text))?.(text);
  });
  const exchange = (text: string, waitMs = 30_000) =>
    new Promise<string | undefined>((resolve) => {
      const key = keyOf(text);
      const timer = setTimeout(() => done(undefined), waitMs);
      const done = (answer: string | undefined) => {
        clearTimeout(timer);
        waiting.delete(key);
        resolve(answer);
      };
      waiting.set(key, done);
      socket.send(text, sipPort, '127.0.0.1');
    });
  const port = socket.address().port;
  return {
    port,
    via: `UDP ${address}:${port}`,
    exchange,
    authenticated: async (make, user, password, method) => {
      const callId = randomBytes(8).toString('hex');
      const first = make({ callId, cseq: 1 });
      const challenge = await exchange(first);
      if (sipStatus(challenge) !== 401) return { challenge: undefined, answer: challenge };
      const headers = [digestAuthorization(sipPort, challenge!, user, password, method ?? first.slice(0, first.indexOf(' ')))];
      return { challenge, answer: await exchange(make({ callId, cseq: 2, headers })) };
    },
    close: () => socket.close(),
  };
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
