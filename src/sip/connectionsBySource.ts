// The stream connections (SIP over TCP or TLS) each source address holds: past its share, a
// source's new connection is closed as it opens, so that one address cannot take the node's whole
// connection cap and lock every other caller out.
import type { Socket } from 'node:net';
import { unmapped } from '../system/cidr.js';

export class ConnectionsBySource {
  private readonly counts = new Map<string, number>();

  constructor(
    /** Connections one source may hold at once; 0: no limit. */
    private readonly max: number,
    /** Sources held by the node's cap only (a trunk's addresses). */
    private readonly unlimited: (address: string) => boolean,
    /** Told of each connection closed for its source's share (metrics). */
    private readonly refused: () => void,
  ) {}

  /** Counts `socket` for its source until it closes; false, and the socket destroyed, past the source's share. */
  admit(socket: Socket): boolean {
    const address = unmapped(socket.remoteAddress ?? '');
    if (this.max === 0 || this.unlimited(address)) return true;
    const held = this.counts.get(address) ?? 0;
    if (held >= this.max) {
      socket.destroy();
      this.refused();
      return false;
    }
    this.counts.set(address, held + 1);
    socket.once('close', () => {
      const left = (this.counts.get(address) ?? 1) - 1;
      if (left > 0) this.counts.set(address, left);
      else this.counts.delete(address);
    });
    return true;
  }
}
