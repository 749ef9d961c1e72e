// A turn:/turns: URL (RFC 7065) as the parts a TURN client or coturn's configuration needs.
export interface TurnAddress {
  host: string;
  port: number;
  /** turns: is TURN over TLS (TCP); turn: is UDP unless ?transport=tcp. */
  transport: 'udp' | 'tcp' | 'tls';
}

export function parseTurnUrl(url: string): TurnAddress {
  const m = /^(turns?):([^?:]+)(?::(\d+))?(?:\?transport=(udp|tcp))?$/.exec(url);
  if (!m) throw new Error(`"${url}" is not a turn:/turns: URL`);
  const tls = m[1] === 'turns';
  return {
    host: m[2]!,
    port: m[3] ? Number(m[3]) : tls ? 5349 : 3478,
    transport: tls ? 'tls' : m[4] === 'tcp' ? 'tcp' : 'udp',
  };
}
