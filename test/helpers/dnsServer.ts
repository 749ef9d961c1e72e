// A tiny authoritative DNS server on 127.0.0.1 (UDP): answers A queries for the names it is given,
// from a table the test changes while it runs (a DNS change between two requests, as a rebinding
// attacker makes one), with TTL 0 so nothing is cached. Other queries get an empty answer.
import { createSocket, type Socket } from 'node:dgram';
import type { AddressInfo } from 'node:net';

export class DnsServer {
  /** name (lowercase, no trailing dot) → its IPv4 address or addresses, answered in this order. */
  readonly records = new Map<string, string | string[]>();
  /** A queries answered, by name. */
  readonly asked: string[] = [];
  private socket: Socket | undefined;

  async start(): Promise<this> {
    this.socket = createSocket('udp4');
    this.socket.on('message', (query, from) => {
      const answer = this.answer(query);
      if (answer) this.socket!.send(answer, from.port, from.address);
    });
    await new Promise<void>((resolve) => this.socket!.bind(0, '127.0.0.1', resolve));
    return this;
  }

  /** As WEBHOOK_DNS_SERVERS takes it. */
  get address(): string {
    return `127.0.0.1:${(this.socket!.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.socket?.close(() => resolve()));
  }

  /** The response to one query (RFC 1035 §4.1), or undefined for what is not a query. */
  private answer(query: Buffer): Buffer | undefined {
    if (query.length < 12 || query[2]! & 0x80) return undefined;
    const labels: string[] = [];
    let at = 12;
    while (at < query.length && query[at] !== 0) {
      labels.push(query.subarray(at + 1, at + 1 + query[at]!).toString('latin1'));
      at += 1 + query[at]!;
    }
    const questionEnd = at + 5;
    if (questionEnd > query.length) return undefined;
    const type = query.readUInt16BE(at + 1);
    const name = labels.join('.').toLowerCase();
    const addresses = type === 1 ? [this.records.get(name) ?? []].flat() : [];
    if (type === 1) this.asked.push(name);
    const header = Buffer.alloc(12);
    query.copy(header, 0, 0, 2);
    // QR, the query's RD, RA; NOERROR (an empty answer for other types), NXDOMAIN for unknown names.
    header.writeUInt16BE(0x8080 | (query.readUInt16BE(2) & 0x0100) | (this.records.has(name) ? 0 : 3), 2);
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(addresses.length, 6);
    const records = addresses.map((address) => {
      const record = Buffer.alloc(16);
      record.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
      record.writeUInt16BE(1, 2); // A
      record.writeUInt16BE(1, 4); // IN
      record.writeUInt32BE(0, 6); // TTL 0
      record.writeUInt16BE(4, 10);
      address.split('.').forEach((octet, i) => record.writeUInt8(Number(octet), 12 + i));
      return record;
    });
    return Buffer.concat([header, query.subarray(12, questionEnd), ...records]);
  }
}
