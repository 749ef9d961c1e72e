// Ports for a server that listens on UDP and TCP at once (coturn): free on both, checked by binding.
import { createSocket } from 'node:dgram';
import { createServer } from 'node:net';
import { isIP } from 'node:net';

/** The port bound (then released), or the bind's error. */
type Trial = { port: number } | { error: NodeJS.ErrnoException };

function udpBinds(host: string, port: number): Promise<Trial> {
  const udp = createSocket(isIP(host) === 6 ? 'udp6' : 'udp4');
  return new Promise((resolve) => {
    udp.once('error', (error) => resolve({ error }));
    udp.bind(port, host, () => {
      const bound = udp.address().port;
      udp.close(() => resolve({ port: bound }));
    });
  });
}

function tcpListens(host: string, port: number): Promise<Trial> {
  const tcp = createServer();
  return new Promise((resolve) => {
    tcp.once('error', (error) => resolve({ error }));
    tcp.listen(port, host, () => {
      const bound = (tcp.address() as { port: number }).port;
      tcp.close(() => resolve({ port: bound }));
    });
  });
}

/** Why host:port cannot be bound for UDP or for TCP (in use, not permitted…), or undefined when both can. */
export async function bindError(host: string, port: number): Promise<NodeJS.ErrnoException | undefined> {
  for (const trial of [udpBinds, tcpListens]) {
    const result = await trial(host, port);
    if ('error' in result) return result.error;
  }
  return undefined;
}

/** A port free for both UDP and TCP on host (the kernel picks a TCP one; UDP is checked). */
export async function freePort(host: string): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const tcp = await tcpListens(host, 0);
    if ('port' in tcp && 'port' in (await udpBinds(host, tcp.port))) return tcp.port;
  }
  throw new Error(`no port free for both UDP and TCP on ${host}`);
}
