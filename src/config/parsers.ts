// The parsers settings are read with (src/config/settings/*.ts): each turns the raw string into its value or throws
// a one-line message (which never repeats a secret).
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import { parseCidr } from '../system/cidr.js';
import { isWebhookSecret } from './webhookSecretFormat.js';

export type Parser<T> = (raw: string) => T;

export interface Setting<T> {
  doc: string;
  /** Default as the user would write it; undefined means "unset". */
  default?: string;
  parse: Parser<T>;
}

export const str: Parser<string> = (raw) => raw;

export const int = (min: number, max: number): Parser<number> => (raw) => {
  if (!/^-?\d+$/.test(raw.trim())) throw new Error(`expected an integer, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new Error(`must be between ${min} and ${max}, got ${n}`);
  return n;
};

export const num = (min: number, max: number): Parser<number> => (raw) => {
  const n = Number(raw.trim());
  if (raw.trim() === '' || !Number.isFinite(n)) throw new Error(`expected a number, got "${raw}"`);
  if (n < min || n > max) throw new Error(`must be between ${min} and ${max}, got ${n}`);
  return n;
};

export const bool: Parser<boolean> = (raw) => {
  const v = raw.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off', ''].includes(v)) return false;
  throw new Error(`expected true or false, got "${raw}"`);
};

export const oneOf = <T extends string>(...values: T[]): Parser<T> => (raw) => {
  if (!values.includes(raw as T)) throw new Error(`must be one of ${values.join(', ')}, got "${raw}"`);
  return raw as T;
};

/** A PEM file's contents, read once at start (an unreadable file is a one-line configuration error). */
export const pemFile: Parser<string> = (raw) => {
  let text: string;
  try {
    text = readFileSync(raw, 'utf8');
  } catch (err) {
    throw new Error(`cannot read ${raw}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  if (!text.includes('-----BEGIN ')) throw new Error(`${raw} is not a PEM file`);
  return text;
};

export const list: Parser<string[]> = (raw) => raw.split(',').map((s) => s.trim()).filter(Boolean);

export const iceUrls = (schemes: string[]): Parser<string[]> => (raw) => {
  const urls = list(raw);
  for (const url of urls) {
    const scheme = url.split(':', 1)[0] ?? '';
    if (!schemes.includes(scheme) || !/^[a-z]+:[^\s:]+(:\d+)?(\?transport=(udp|tcp))?$/.test(url)) {
      throw new Error(`"${url}" is not a ${schemes.join('/')}: URL like ${schemes[0]}:host:port`);
    }
  }
  return urls;
};

export const webhookUrl: Parser<string> = (raw) => {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`expected an http(s) URL, got "${raw}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`expected an http(s) URL, got "${raw}"`);
  return url.toString();
};

/** A collector's URL: http or https (its credentials go in OTEL_EXPORTER_OTLP_HEADERS, never in the URL: it is not repeated). */
export const otlpUrl: Parser<string> = (raw) => {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new Error('expected an http(s) URL such as http://otel-collector:4318');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('expected an http(s) URL such as http://otel-collector:4318');
  return raw.trim();
};

/** The secret is never repeated in the message. */
export const webhookSecret: Parser<string> = (raw) => {
  if (!isWebhookSecret(raw)) throw new Error('expected whsec_ followed by base64 of at least 24 bytes');
  return raw;
};

export const ip: Parser<string> = (raw) => {
  if (raw !== '' && !isIP(raw)) throw new Error(`expected an IP address, got "${raw}"`);
  return raw;
};

// Never echoes an entry: it may carry a TURN password.
export const serverIceUrls: Parser<string[]> = (raw) => {
  const urls = list(raw);
  urls.forEach((url, i) => {
    if (!/^(stun|turns?):([^\s@]+@)?[^\s@:/?]+(:\d+)?(\?transport=(udp|tcp|tls))?$/.test(url)) {
      throw new Error(`entry ${i + 1} is not like stun:host:port or turn:user:pass@host:port?transport=udp`);
    }
  });
  return urls;
};

export const peerIps: Parser<string[]> = (raw) => {
  const entries = list(raw);
  for (const e of entries) {
    if (!e.split('-').every((part) => isIP(part))) throw new Error(`"${e}" is not an IP address or a range a-b`);
  }
  return entries;
};

export const cidrList: Parser<string[]> = (raw) => {
  const entries = list(raw);
  for (const e of entries) parseCidr(e);
  return entries;
};

/** DNS servers as c-ares takes them: ip, ip:port, [ipv6]:port. */
export const dnsServers: Parser<string[]> = (raw) => {
  const entries = list(raw);
  for (const e of entries) {
    const m = /^\[([^\]]+)\]:(\d+)$/.exec(e) ?? /^([^:]+):(\d+)$/.exec(e);
    const [address, port] = m ? [m[1]!, Number(m[2])] : [e, 53];
    if (!isIP(address) || port < 1 || port > 65535) throw new Error(`"${e}" is not like 192.0.2.53, 192.0.2.53:5353 or [2001:db8::53]:53`);
  }
  return entries;
};

/** SIP_USERS: user:password pairs; never echoes an entry (it carries a password). */
export const sipUsers: Parser<Map<string, string>> = (raw) => {
  const users = new Map<string, string>();
  list(raw).forEach((entry, i) => {
    const at = entry.indexOf(':');
    if (at < 1 || at === entry.length - 1 || !/^[A-Za-z0-9._~!$&'()*+;=-]+$/.test(entry.slice(0, at))) {
      throw new Error(`entry ${i + 1} is not like user:password`);
    }
    users.set(entry.slice(0, at), entry.slice(at + 1));
  });
  return users;
};

/** One upstream registration (SIP_REGISTRATIONS): the account at a provider's registrar. */
export interface SipRegistrationSetting {
  user: string;
  password: string;
  /** The registrar's host (name or address) and port. */
  host: string;
  port: number;
  /** The registration's lifetime asked for (seconds). */
  expires: number;
}

export const sipRegistrations: Parser<SipRegistrationSetting[]> = (raw) =>
  list(raw).map((entry, i) => {
    // sip:user:password@host[:port][;expires=N] (the password percent-encoded where it has : @ , ;).
    const m = /^sip:([^:@;]+):([^@;]*)@(\[[0-9a-fA-F:.]+\]|[^:;\[\]]+)(?::(\d{1,5}))?(?:;expires=(\d{1,6}))?$/.exec(entry);
    if (!m) throw new Error(`entry ${i + 1} is not like sip:user:password@registrar[:port][;expires=seconds]`);
    const port = m[4] ? Number(m[4]) : 5060;
    const expires = m[5] ? Number(m[5]) : 600;
    if (port < 1 || port > 65535) throw new Error(`entry ${i + 1}: port ${port} out of range`);
    if (expires < 60 || expires > 86_400) throw new Error(`entry ${i + 1}: expires must be 60–86400 seconds`);
    return { user: decodeURIComponent(m[1]!), password: decodeURIComponent(m[2]!), host: m[3]!.replace(/^\[|\]$/g, ''), port, expires };
  });

/** The trunk outbound SIP calls go through (SIP_OUTBOUND_TRUNK): its host and port, and digest credentials when it asks. */
export interface SipTrunkSetting {
  host: string;
  port: number;
  user?: string;
  password?: string;
}

export const sipTrunk: Parser<SipTrunkSetting | undefined> = (raw) => {
  if (raw.trim() === '') return undefined;
  // sip:[user:password@]host[:port] (the password percent-encoded where it has : @ , ;).
  const m = /^sip:(?:([^:@;]+):([^@;]*)@)?(\[[0-9a-fA-F:.]+\]|[^:;@\[\]]+)(?::(\d{1,5}))?$/.exec(raw.trim());
  if (!m) throw new Error('is not like sip:[user:password@]host[:port]');
  const port = m[4] ? Number(m[4]) : 5060;
  if (port < 1 || port > 65535) throw new Error(`port ${port} out of range`);
  const credentials = m[1] === undefined ? {} : { user: decodeURIComponent(m[1]), password: decodeURIComponent(m[2]!) };
  return { host: m[3]!.replace(/^\[|\]$/g, ''), port, ...credentials };
};

/** SIP_OUTBOUND_ALLOW: which destinations each API key may call (`*` for every key), as glob patterns. */
export type SipOutboundAllow = Map<string, string[]>;

export const sipOutboundAllow: Parser<SipOutboundAllow> = (raw) => {
  const allow: SipOutboundAllow = new Map();
  raw.split(';').map((s) => s.trim()).filter(Boolean).forEach((entry, i) => {
    const eq = entry.indexOf('=');
    const key = entry.slice(0, eq).trim();
    const patterns = list(entry.slice(eq + 1));
    if (eq < 1 || !(key === '*' || /^key_[A-Za-z0-9]+$/.test(key)) || !patterns.length) throw new Error(`entry ${i + 1} is not like key_…=PATTERN[,PATTERN…] (or *=… for every key)`);
    for (const p of patterns) if (!/^[A-Za-z0-9+*._~:@;=%\[\]-]+$/.test(p)) throw new Error(`entry ${i + 1}: pattern "${p}" has characters a destination never has`);
    allow.set(key, [...(allow.get(key) ?? []), ...patterns]);
  });
  return allow;
};

export const secretList: Parser<string[]> = (raw) => {
  const secrets = list(raw);
  for (const s of secrets) if (s.length < 16) throw new Error('each secret must be at least 16 characters');
  return secrets;
};

export const databaseUrl: Parser<string> = (raw) => {
  if (!/^(sqlite:|postgres:\/\/|postgresql:\/\/)/.test(raw)) {
    throw new Error(`expected sqlite:<path> or postgres://..., got "${raw.replace(/:[^:@/]*@/, ':***@')}"`);
  }
  return raw;
};

export const portRange: Parser<[number, number] | undefined> = (raw) => {
  if (raw === '') return undefined;
  const m = /^(\d+)-(\d+)$/.exec(raw.trim());
  if (!m) throw new Error(`expected MIN-MAX, got "${raw}"`);
  const lo = Number(m[1]);
  const hi = Number(m[2]);
  if (lo < 1024 || hi > 65535 || lo > hi) throw new Error(`range must lie within 1024-65535 with MIN <= MAX`);
  return [lo, hi];
};

/** PARLEY_WORKERS: auto (one per core) or a count. */
export const workers: Parser<number> = (raw) => (raw.trim() === 'auto' ? availableParallelism() : int(1, 256)(raw));

/** An IP address others can reach: not a wildcard. */
export const concreteIp: Parser<string> = (raw) => {
  const v = raw.trim();
  if (!isIP(v)) throw new Error(`expected an IP address, got "${raw}"`);
  if (v === '0.0.0.0' || v === '::') throw new Error('must be a concrete address (the other nodes are given it), not a wildcard');
  return v;
};

/** proxy-addr's names for ranges, and addresses or CIDR ranges. */
export const trustedProxies: Parser<string[]> = (raw) => {
  const entries = list(raw);
  for (const e of entries) if (!['loopback', 'linklocal', 'uniquelocal'].includes(e)) parseCidr(e);
  return entries;
};

/** Every variable Parley reads. */
