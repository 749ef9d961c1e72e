// The body of GET /v1/realtime/ice-config: public STUN entries and one authenticated TURN entry.
import { mintTurnCredential } from './turnCredentials.js';

export interface IceServerEntry {
  urls: string[];
  username?: string;
  credential?: string;
}

export interface IceConfigOptions {
  stunUrls: string[];
  turnUrls: string[];
  /** The secret the credential is signed with (the key's own for Parley's coturn, else the first TURN secret). */
  turnSecret: string | undefined;
  turnTtlSeconds: number;
}

export function buildIceServers(opts: IceConfigOptions, tokenJti: string): IceServerEntry[] {
  const servers: IceServerEntry[] = [];
  if (opts.stunUrls.length) servers.push({ urls: opts.stunUrls });
  const secret = opts.turnSecret;
  if (opts.turnUrls.length && secret) {
    const { username, credential } = mintTurnCredential(secret, tokenJti, opts.turnTtlSeconds);
    servers.push({ urls: opts.turnUrls, username, credential });
  }
  return servers;
}
