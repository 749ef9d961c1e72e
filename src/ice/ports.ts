// Ports for a server that listens on UDP and TCP at once (coturn): free on both, checked by binding.
import { createSocket } from 'node:dgram';
import { createServer } from 'node:net';
import { isIP } from 'node:net';

function udpBinds(host: string, port: number): Promise<number | undefined> {
  const udp = createSocket(isIP(host) === 6 ? 'udp6' : 'udp4');
  return new Promise((resolve) => {
    udp.once('error', () => resolve(undefined));
    udp.bind(port, host, () => {
      const bound = udp.address().port;
      udp.close(() => resolve(bound));
    });
  });
}

function tcpListens(host: string, port: number): Promise<number | undefined> {
  const tcp = createServer();
  return new Promise((resolve) => {
    tcp.once('error', () => resolve(undefined));
    tcp.listen(port, host, () => {
      const bound = (tcp.address() as { port: number }).port;
      tcp.close(() => resolve(bound));
    });
  });
}

/** Whether nothing listens on host:port, neither UDP nor TCP. */
export async function isPortFree(host: string, port: number): Promise<boolean> {
  return (await udpBinds(host, port)) !== undefined && (await tcpListens(host, port)) !== undefined;
}

/** A port free for both UDP and TCP on host (the kernel picks a TCP one; UDP is checked). */
export async function freePort(host: string): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const port = await tcpListens(host, 0);
    if (port !== undefined && (await udpBinds(host, port)) !== undefined) return port;
  }
  throw new Error(`no port free for both UDP and TCP on ${host}`);
}
