// Host names to addresses for the server's outbound requests: the system's resolver (getaddrinfo,
// /etc/hosts included), or named DNS servers asked directly (c-ares), e.g. a resolver of the
// operator's own or a test's.
import { promises as dns } from 'node:dns';
import { isIP } from 'node:net';

/** Every address `host` resolves to (an address resolves to itself); throws when there is none. */
export type HostResolver = (host: string) => Promise<string[]>;

/** `servers`: ip or ip:port entries (c-ares' setServers form); empty: the system's resolver. */
export function hostResolver(servers: readonly string[]): HostResolver {
  if (!servers.length) {
    return async (host) => {
      if (isIP(host)) return [host];
      try {
        return (await dns.lookup(host, { all: true, verbatim: true })).map((a) => a.address);
      } catch (err) {
        throw unresolved(host, err as NodeJS.ErrnoException);
      }
    };
  }
  const resolver = new dns.Resolver({ timeout: 2000, tries: 2 });
  resolver.setServers([...servers]);
  return async (host) => {
    if (isIP(host)) return [host];
    const answers = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)]);
    const addresses = answers.flatMap((a) => (a.status === 'fulfilled' ? a.value : []));
    if (addresses.length) return addresses;
    throw unresolved(host, answers.find((a) => a.status === 'rejected')?.reason as NodeJS.ErrnoException);
  };
}

function unresolved(host: string, err: NodeJS.ErrnoException): Error {
  return new Error(`${host} does not resolve (${err.code ?? err.message})`);
}
