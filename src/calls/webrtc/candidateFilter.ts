// Which remote ICE candidates the server's WebRTC stack may send connectivity checks to. A client
// names the addresses; unchecked, the server would send STUN to whatever it is told (multicast, the
// cloud metadata service, the server's internal network): an amplification and scanning vector.
//
// The rules, first match wins:
//   1. ICE_CANDIDATE_DENY ranges are refused.
//   2. ICE_CANDIDATE_ALLOW ranges are accepted (overriding 3 and 4).
//   3. Never reachable or never meant for media: unspecified, multicast, broadcast, link-local,
//      cloud metadata endpoints, IANA special-purpose ranges (documentation, benchmarking, reserved).
//   4. Loopback and private ranges (127/8, ::1, 10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7) are
//      accepted only when one of the server's own media addresses lies in the same range
//      (ICE_BIND_ADDRESS, or else every non-loopback interface address: loopback candidates thus
//      only when the media is bound to loopback).
//   5. Anything else (public unicast) is accepted.
// A candidate whose address is not an IP literal (mDNS .local or any host name) is refused: the
// stack would resolve it. Candidates learned from incoming checks (peer-reflexive) are not affected.
import type { BlockList } from 'node:net';
import { networkInterfaces } from 'node:os';
import { blockList, contains, familyOf, unmapped } from '../../system/cidr.js';
import type { RemoteCandidate } from './peer/types.js';

export type DropReason =
  | 'unparsable'
  | 'not_an_ip'
  | 'bad_port'
  | 'denied'
  | 'unspecified'
  | 'multicast'
  | 'broadcast'
  | 'metadata'
  | 'link_local'
  | 'reserved'
  | 'loopback'
  | 'private';

export type CandidateVerdict = { ok: true; address: string } | { ok: false; reason: DropReason; address?: string };

interface Range {
  reason: DropReason;
  cidrs: string[];
}

/** Rule 3, in order (the metadata endpoints sit inside link-local, CGNAT and ULA ranges). */
const NEVER: Range[] = [
  { reason: 'unspecified', cidrs: ['0.0.0.0/8', '::/128'] },
  { reason: 'multicast', cidrs: ['224.0.0.0/4', 'ff00::/8'] },
  { reason: 'broadcast', cidrs: ['255.255.255.255/32'] },
  // AWS/GCP/Azure/OpenStack, AWS ECS, Alibaba, Azure WireServer, Oracle (legacy), AWS over IPv6.
  { reason: 'metadata', cidrs: ['169.254.169.254/32', '169.254.170.2/32', '100.100.100.200/32', '168.63.129.16/32', '192.0.0.192/32', 'fd00:ec2::254/128'] },
  { reason: 'link_local', cidrs: ['169.254.0.0/16', 'fe80::/10'] },
  // IETF protocol assignments, documentation, benchmarking, reserved (240/4), discard-only.
  { reason: 'reserved', cidrs: ['192.0.0.0/24', '192.0.2.0/24', '198.18.0.0/15', '198.51.100.0/24', '203.0.113.0/24', '240.0.0.0/4', '2001:db8::/32', '2001:2::/48', '100::/64'] },
];

/** Rule 4: accepted only when the server itself has an address in the same range. */
const OWN_NETWORK: Range[] = [
  { reason: 'loopback', cidrs: ['127.0.0.0/8', '::1/128'] },
  { reason: 'private', cidrs: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', 'fc00::/7'] },
];

export interface CandidateFilterOptions {
  allow: string[];
  deny: string[];
  /** The server's own media addresses (see rule 4). */
  ownAddresses: string[];
}

export class CandidateFilter {
  private readonly deny: BlockList;
  private readonly allow: BlockList;
  private readonly never: { reason: DropReason; list: BlockList }[];
  /** Rule 4's ranges, each with whether the server sits on it. */
  private readonly ownNetwork: { reason: DropReason; list: BlockList; own: boolean }[];

  constructor(opts: CandidateFilterOptions) {
    this.deny = blockList(opts.deny);
    this.allow = blockList(opts.allow);
    this.never = NEVER.map((r) => ({ reason: r.reason, list: blockList(r.cidrs) }));
    this.ownNetwork = OWN_NETWORK.flatMap((r) =>
      // One entry per range, so that sitting on 10/8 does not open 192.168/16.
      r.cidrs.map((cidr) => {
        const list = blockList([cidr]);
        return { reason: r.reason, list, own: opts.ownAddresses.some((a) => contains(list, a)) };
      }),
    );
  }

  /** The verdict on one candidate (`candidate:…`, with or without `a=`). */
  check(candidate: string): CandidateVerdict {
    const fields = candidate.trim().replace(/^a=/, '').replace(/^candidate:/, '').split(/\s+/);
    // foundation component transport priority address port "typ" type …
    if (fields.length < 8 || fields[6] !== 'typ') return { ok: false, reason: 'unparsable' };
    const address = unmapped(fields[4]!);
    const port = Number(fields[5]);
    const family = familyOf(address);
    if (!family) return { ok: false, reason: 'not_an_ip' };
    if (!Number.isInteger(port) || port < 1 || port > 65535) return { ok: false, reason: 'bad_port', address };
    if (this.deny.check(address, family)) return { ok: false, reason: 'denied', address };
    if (this.allow.check(address, family)) return { ok: true, address };
    for (const { reason, list } of this.never) if (list.check(address, family)) return { ok: false, reason, address };
    for (const { reason, list, own } of this.ownNetwork) {
      if (list.check(address, family)) return own ? { ok: true, address } : { ok: false, reason, address };
    }
    return { ok: true, address };
  }

  /**
   * The offer as the stack may see it: the SDP without the a=candidate lines that fail, the body's
   * candidates that pass, and what was dropped.
   */
  filterOffer(sdp: string, candidates: RemoteCandidate[]): { sdp: string; candidates: RemoteCandidate[]; given: string[]; dropped: { address?: string; reason: DropReason }[] } {
    const given: string[] = [];
    const dropped: { address?: string; reason: DropReason }[] = [];
    const keep = (line: string): boolean => {
      const verdict = this.check(line);
      if (verdict.ok) given.push(verdict.address);
      else dropped.push(verdict.address ? { address: verdict.address, reason: verdict.reason } : { reason: verdict.reason });
      return verdict.ok;
    };
    const filteredSdp = sdp
      .split('\n')
      .filter((line) => !line.startsWith('a=candidate:') || keep(line))
      .join('\n');
    return { sdp: filteredSdp, candidates: candidates.filter((c) => keep(c.candidate)), given, dropped };
  }
}

/** The server's own media addresses: the bind address, or else every non-loopback interface address. */
export function ownMediaAddresses(bindAddress: string | undefined): string[] {
  if (bindAddress) return [bindAddress];
  return Object.values(networkInterfaces())
    .flat()
    .filter((i) => i && !i.internal)
    .map((i) => i!.address.replace(/%.*$/, ''));
}
