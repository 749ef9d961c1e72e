// Requests between the nodes of one cluster (and the workers of one node): each request a node
// passes to another's node-to-node listener is signed, and that listener answers nothing else. The
// key is derived from API_KEY_PEPPER, which every node sharing a store holds already (their API
// keys and signing keys could not be read otherwise), so a node needs no further setting, and
// whoever can merely reach the listener cannot pass for a node (and so skip the per-address limits,
// which the node that first took the request has applied).
//
// What is signed: the sending node's id, the time, the method, the path with its query, and the
// client's credential (Authorization and, for a browser's WebSocket, its subprotocols): a signature
// seen on the network is worth nothing for another route, another credential, or after a few minutes.
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

/** The node that passed a request on (also what its id is signed as). */
export const FORWARDED_BY = 'x-parley-forwarded-by';
/** `t=<unix seconds>,s=<HMAC-SHA256, base64url>`. */
export const NODE_AUTH = 'x-parley-node-auth';
/** A signature older or newer than this is refused: clocks of the nodes may differ by less. */
export const MAX_SKEW_SECONDS = 300;

/** The request headers a signature covers besides the method and path (the client's credential). */
const SIGNED_HEADERS = ['authorization', 'sec-websocket-protocol'] as const;

export interface SignedRequest {
  method: string;
  /** Path and query, exactly as sent. */
  path: string;
  headers: Readonly<Record<string, string | string[] | undefined>>;
}

export class NodeAuth {
  private readonly key: Buffer;

  constructor(
    /** This node's id (the `x-parley-forwarded-by` it sends). */
    readonly nodeId: string,
    pepper: string,
    private readonly now: () => number = Date.now,
  ) {
    this.key = Buffer.from(hkdfSync('sha256', pepper, 'parley', 'node-to-node requests v1', 32));
  }

  /** The headers that make `request` one of this node's: its id and its signature. */
  sign(request: SignedRequest): Record<string, string> {
    const t = Math.floor(this.now() / 1000);
    return { [FORWARDED_BY]: this.nodeId, [NODE_AUTH]: `t=${t},s=${this.mac(this.nodeId, t, request)}` };
  }

  /** The id of the node that signed `request`, or undefined when it is not signed by a node of this cluster (or not now). */
  verify(request: SignedRequest): string | undefined {
    const by = request.headers[FORWARDED_BY];
    const auth = request.headers[NODE_AUTH];
    if (typeof by !== 'string' || typeof auth !== 'string') return undefined;
    const m = /^t=(\d{1,12}),s=([\w-]{43})$/.exec(auth);
    if (!m) return undefined;
    const t = Number(m[1]);
    if (Math.abs(this.now() / 1000 - t) > MAX_SKEW_SECONDS) return undefined;
    const expected = Buffer.from(this.mac(by, t, request));
    const given = Buffer.from(m[2]!);
    return given.length === expected.length && timingSafeEqual(given, expected) ? by : undefined;
  }

  private mac(nodeId: string, t: number, { method, path, headers }: SignedRequest): string {
    const credentials = SIGNED_HEADERS.map((name) => [headers[name] ?? ''].flat().join(','));
    return createHmac('sha256', this.key)
      .update(JSON.stringify([nodeId, t, method.toUpperCase(), path, ...credentials]))
      .digest('base64url');
  }
}
