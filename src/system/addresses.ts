// Addresses as URLs write them.
import { isIP } from 'node:net';

/** An IP address or host name as the host part of a URL: an IPv6 address in brackets. */
export const hostInUrl = (host: string): string => (isIP(host) === 6 ? `[${host}]` : host);
