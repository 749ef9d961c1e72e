// Address ranges (CIDR) for configuration and for judging addresses against them.
import { BlockList, isIP } from 'node:net';

export type Family = 'ipv4' | 'ipv6';

/** Parses `a.b.c.d/n`, `x::y/n` or a bare address; throws on anything else (for configuration). */
export function parseCidr(text: string): { address: string; prefix: number; family: Family } {
  const [address = '', prefixText, extra] = text.trim().split('/');
  const family = familyOf(address);
  if (!family || extra !== undefined) throw new Error(`"${text}" is not an address or a CIDR range`);
  const max = family === 'ipv4' ? 32 : 128;
  const prefix = prefixText === undefined ? max : Number(prefixText);
  if (!/^\d+$/.test(prefixText ?? String(max)) || prefix > max) throw new Error(`"${text}" has a bad prefix length`);
  return { address, prefix, family };
}

/** The ranges as one list to check addresses against. */
export function blockList(cidrs: string[]): BlockList {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const { address, prefix, family } = parseCidr(cidr);
    list.addSubnet(address, prefix, family);
  }
  return list;
}

/** Whether `address` (an IPv4-mapped IPv6 address counts as its IPv4 address) lies in the list. */
export function contains(list: BlockList, address: string): boolean {
  const plain = unmapped(address);
  const family = familyOf(plain);
  return !!family && list.check(plain, family);
}

export function familyOf(address: string): Family | undefined {
  const v = isIP(address);
  return v === 4 ? 'ipv4' : v === 6 ? 'ipv6' : undefined;
}

/**
 * An IPv4 address written as IPv6 (::ffff:a.b.c.d, or ::ffff:7f00:1 as URLs and resolvers
 * shorten it) is judged as the IPv4 address it is.
 */
export function unmapped(address: string): string {
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (dotted) return dotted[1]!;
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!hex) return address;
  const [high, low] = [parseInt(hex[1]!, 16), parseInt(hex[2]!, 16)];
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}
