// Which addresses a request the server makes on a user's behalf (a webhook, and any such fetch) may
// connect to. A URL is the user's to choose, so without this it could point the server at what
// only the server reaches: its own machine, the private network, the cloud's metadata service.
// Those are refused unless an operator's allow list (CIDR ranges) names them; Parley's own
// listeners are refused whatever the list says (nothing of Parley's is meant to receive these).
import { isIP, type BlockList } from 'node:net';
import { networkInterfaces } from 'node:os';
import { blockList, contains, unmapped } from './cidr.js';

/** Internal ranges, the most specific first (the metadata address lies in link-local and ULA). */
const INTERNAL_RANGES = [
  { kind: 'a cloud metadata address', list: blockList(['169.254.169.254/32', 'fd00:ec2::254/128']) },
  { kind: 'an unspecified address', list: blockList(['0.0.0.0/8', '::/128']) },
  { kind: 'a loopback address', list: blockList(['127.0.0.0/8', '::1/128']) },
  { kind: 'a private address', list: blockList(['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7']) },
  { kind: 'a link-local address', list: blockList(['169.254.0.0/16', 'fe80::/10']) },
  { kind: 'a shared (CGNAT) address', list: blockList(['100.64.0.0/10']) },
  { kind: 'a multicast address', list: blockList(['224.0.0.0/4', 'ff00::/8']) },
  // 240/4 holds the broadcast address 255.255.255.255.
  { kind: 'a reserved address', list: blockList(['240.0.0.0/4']) },
];

/** What kind of internal address `address` is ("a loopback address"…), or undefined for a public one. */
export function internalKind(address: string): string | undefined {
  return INTERNAL_RANGES.find((r) => contains(r.list, address))?.kind;
}

/** A socket Parley listens on; host may be a wildcard (0.0.0.0, ::) or a name. */
export interface Listener {
  host: string;
  port: number;
}

export class OutboundPolicy {
  private readonly allowed: BlockList;

  /** `allowSetting` names the setting that holds `allowedCidrs`, for the refusals' messages. */
  constructor(
    allowedCidrs: string[],
    private readonly allowSetting: string,
  ) {
    this.allowed = blockList(allowedCidrs);
  }

  /** Why connecting to `address`:`port` is refused, or undefined when it is allowed. */
  refusal(address: string, port: number, ownListeners: readonly Listener[]): string | undefined {
    const plain = unmapped(address);
    if (ownListeners.some((l) => l.port === port && listensOn(l.host, plain))) return `${plain} port ${port} is one of Parley's own listeners`;
    const kind = internalKind(plain);
    if (kind && !contains(this.allowed, plain)) return `${plain} is ${kind}, refused unless ${this.allowSetting} allows it`;
    return undefined;
  }
}

/** Whether a listener bound to `host` accepts connections to `address`. */
function listensOn(host: string, address: string): boolean {
  const kind = internalKind(address);
  // Connecting to 0.0.0.0 or :: reaches this machine's listeners.
  if (kind === 'an unspecified address') return true;
  const bound = unmapped(host);
  if (isIP(bound) && bound !== '0.0.0.0' && bound !== '::') return bound === address;
  // A wildcard or a name may stand for any address of this machine.
  return kind === 'a loopback address' || localAddresses().has(address);
}

function localAddresses(): Set<string> {
  return new Set(
    Object.values(networkInterfaces())
      .flat()
      .map((i) => unmapped(i!.address)),
  );
}
