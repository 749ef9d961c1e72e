// Random identifiers: unguessable, URL-safe.
import { randomBytes, randomInt } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

export function randomBase62(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += BASE62[randomInt(62)];
  return out;
}

/** `prefix` + 128 random bits, base64url. */
export function randomId(prefix: string, bytes = 16): string {
  return prefix + randomBytes(bytes).toString('base64url');
}
