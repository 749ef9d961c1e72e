// A lossy SIP relay on loopback (UDP) between a caller and Parley's SIP port, for the transaction
// tests and benchmarks: it forwards both ways and drops the first final response (≥ 200) of each
// INVITE transaction (by CSeq number) and the first ACK of each, as a lossy network would — the
// transactions' retransmissions must carry the call through.
import { createSocket, type RemoteInfo } from 'node:dgram';

export interface SipRelay {
  /** Where the caller sends (the relay's front port). */
  port: number;
  /** Final responses and ACKs it dropped. */
  dropped: { finals: number; acks: number };
  close(): void;
}

/** `lossy` false: a plain relay (for the benchmark's baseline). */
export async function startSipRelay(target: { address: string; port: number }, opts: { lossy?: boolean } = {}): Promise<SipRelay> {
  const lossy = opts.lossy ?? true;
  const front = createSocket('udp4');
  const back = createSocket('udp4');
  await Promise.all([front, back].map((s) => new Promise<void>((resolve) => s.bind(0, '127.0.0.1', resolve))));
  let caller: RemoteInfo | undefined;
  const droppedFinal = new Set<string>();
  const droppedAck = new Set<string>();
  const dropped = { finals: 0, acks: 0 };
  /** The Call-ID and CSeq number of a message: its INVITE transaction. */
  const transactionOf = (text: string) => `${/\r\n(?:Call-ID|i)\s*:\s*(\S+)/i.exec(text)?.[1]}|${/\r\nCSeq\s*:\s*(\d+)/i.exec(text)?.[1]}`;

  front.on('message', (packet, from) => {
    caller = from;
    const text = packet.toString('latin1');
    if (lossy && text.startsWith('ACK ')) {
      const key = transactionOf(text);
      if (!droppedAck.has(key)) {
        droppedAck.add(key);
        dropped.acks++;
        return;
      }
    }
    back.send(packet, target.port, target.address);
  });
  back.on('message', (packet) => {
    if (!caller) return;
    const text = packet.toString('latin1');
    const final = /^SIP\/2\.0 [2-6]\d\d /.test(text) && /\r\nCSeq\s*:\s*\d+ INVITE\r\n/i.test(text);
    if (lossy && final) {
      const key = transactionOf(text);
      if (!droppedFinal.has(key)) {
        droppedFinal.add(key);
        dropped.finals++;
        return;
      }
    }
    front.send(packet, caller.port, caller.address);
  });
  return {
    port: front.address().port,
    dropped,
    close() {
      front.close();
      back.close();
    },
  };
}
