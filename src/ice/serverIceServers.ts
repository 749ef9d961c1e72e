// The STUN/TURN servers the server's own peer connections gather with (SERVER_ICE_SERVERS), in
// libdatachannel's URL form. A turn:/turns: entry without user:pass@ gets a fresh TURN REST
// credential from the first TURN secret, so a coturn in use-auth-secret mode accepts the server too.
import { mintTurnCredential } from './turnCredentials.js';

/** The label in server-side TURN usernames (a client's carries its token's jti instead). */
const SERVER_LABEL = 'parley-server';

export function serverIceServers(urls: string[], turnSecret: string | undefined, ttlSeconds: number): string[] {
  return urls.map((url) => {
    const m = /^(turns?):([^@]+)$/.exec(url);
    if (!m || !turnSecret) return url;
    const { username, credential } = mintTurnCredential(turnSecret, SERVER_LABEL, ttlSeconds);
    // libdatachannel URL-decodes user and password: the ':' in the username and base64's '+/=' survive.
    return `${m[1]}:${encodeURIComponent(username)}:${encodeURIComponent(credential)}@${m[2]}`;
  });
}
