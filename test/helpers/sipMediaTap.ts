// A SIP relay on loopback between a caller (SIPp) and Parley's SIP port, UDP and TCP, that puts each
// call's RTP through a UDP socket of its own: it rewrites the SDP of the INVITE and of its 200 so
// that both sides send their media to that socket, and counts what passes. Parley's RTP is symmetric
// (it latches the source of the caller's packets), so a tap beside the caller could not see it: in
// the path, the tap sees every packet Parley sends back, as the caller gets it, and when.
import { createSocket, type RemoteInfo, type Socket as UdpSocket } from 'node:dgram';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { frame } from '../../src/sip/message.ts';

/** One call as the tap saw it (times from performance.now()). */
export interface TappedCall {
  callId: string;
  invitedAt: number;
  /** When its 200 OK passed (its answer time is this less invitedAt). */
  answeredAt?: number;
  ackedAt?: number;
  byeAt?: number;
  /** RTP packets from the caller to Parley, and from Parley back to the caller. */
  toParley: number;
  fromParley: number;
  firstFromParley?: number;
  lastFromParley?: number;
  /** The longest gap between two of Parley's packets (ms), and when it began. */
  longestGapMs: number;
  longestGapAt?: number;
}

export interface SipMediaTap {
  /** Where the caller sends its SIP (UDP and TCP). */
  port: number;
  calls: Map<string, TappedCall>;
  close(): Promise<void>;
}

const header = (text: string, name: string, compact: string) => new RegExp(`\r\n(?:${name}|${compact})[ \t]*:[ \t]*([^\r]*)`, 'i').exec(text)?.[1]?.trim();
const isRtcp = (packet: Buffer) => packet.length >= 2 && packet[1]! >= 192 && packet[1]! <= 223;

/** `message` with its SDP's audio port replaced by `port` (and its Content-Length kept true); the port it had. */
function rewriteSdp(message: Buffer, port: number): { bytes: Buffer; was: number } | undefined {
  const text = message.toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  const body = text.slice(end + 4);
  const m = /\r\nm=audio (\d+)/.exec('\r\n' + body);
  if (!m) return undefined;
  const sdp = body.replace(/(^|\r\n)m=audio \d+/, `$1m=audio ${port}`);
  const head = text.slice(0, end).replace(/\r\n(Content-Length|l)[ \t]*:[ \t]*\d+/i, `\r\nContent-Length: ${Buffer.byteLength(sdp, 'latin1')}`);
  return { bytes: Buffer.from(`${head}\r\n\r\n${sdp}`, 'latin1'), was: Number(m[1]) };
}

export async function startSipMediaTap(sipPort: number): Promise<SipMediaTap> {
  const calls = new Map<string, TappedCall>();
  const media = new Map<string, { socket: UdpSocket; parleyPort?: number; callerPort?: number }>();
  const sockets: UdpSocket[] = [];
  const bind = async (): Promise<UdpSocket> => {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    sockets.push(socket);
    return socket;
  };

  /** The media socket of a call, opened at its INVITE. */
  const mediaOf = async (callId: string) => {
    let entry = media.get(callId);
    if (entry) return entry;
    const socket = await bind();
    entry = { socket };
    media.set(callId, entry);
    const call = calls.get(callId)!;
    const own = entry;
    socket.on('message', (packet: Buffer, from: RemoteInfo) => {
      if (from.port === own.parleyPort) {
        if (!isRtcp(packet)) {
          const now = performance.now();
          if (call.lastFromParley !== undefined && now - call.lastFromParley > call.longestGapMs) {
            call.longestGapMs = now - call.lastFromParley;
            call.longestGapAt = call.lastFromParley;
          }
          call.firstFromParley ??= now;
          call.lastFromParley = now;
          call.fromParley++;
        }
        if (own.callerPort) socket.send(packet, own.callerPort, '127.0.0.1');
      } else {
        own.callerPort = from.port;
        if (!isRtcp(packet)) call.toParley++;
        if (own.parleyPort) socket.send(packet, own.parleyPort, '127.0.0.1');
      }
    });
    return entry;
  };

  /** A message on its way from the caller to Parley (`toParley`) or back: noted, its SDP rewritten. */
  const pass = async (message: Buffer, toParley: boolean): Promise<Buffer> => {
    const text = message.toString('latin1');
    const callId = header(text, 'Call-ID', 'i');
    if (!callId) return message;
    const now = performance.now();
    if (toParley && text.startsWith('INVITE ') && !calls.has(callId)) calls.set(callId, { callId, invitedAt: now, toParley: 0, fromParley: 0, longestGapMs: 0 });
    const call = calls.get(callId);
    if (!call) return message;
    if (toParley && text.startsWith('ACK ')) call.ackedAt ??= now;
    if (toParley && text.startsWith('BYE ')) call.byeAt ??= now;
    const invite = /\r\nCSeq[ \t]*:[ \t]*\d+ INVITE\r\n/i.test(text);
    if (toParley && text.startsWith('INVITE ')) {
      const entry = await mediaOf(callId);
      const rewritten = rewriteSdp(message, entry.socket.address().port);
      return rewritten?.bytes ?? message;
    }
    if (!toParley && invite && text.startsWith('SIP/2.0 200 ')) {
      call.answeredAt ??= now;
      const entry = await mediaOf(callId);
      const rewritten = rewriteSdp(message, entry.socket.address().port);
      if (!rewritten) return message;
      entry.parleyPort = rewritten.was;
      return rewritten.bytes;
    }
    return message;
  };

  // UDP: one socket faces the caller, one Parley (whose answers and requests go back where they came from).
  const front = await bind();
  const back = await bind();
  let caller: RemoteInfo | undefined;
  // In order: a message waiting for its media socket must not be overtaken by the next.
  let queue = Promise.resolve();
  front.on('message', (packet: Buffer, from: RemoteInfo) => {
    caller = from;
    queue = queue.then(async () => back.send(await pass(packet, true), sipPort, '127.0.0.1'));
  });
  back.on('message', (packet: Buffer) => {
    queue = queue.then(async () => {
      if (caller) front.send(await pass(packet, false), caller.port, caller.address);
    });
  });

  // TCP on the same port: a connection to Parley for each of the caller's, messages framed each way.
  const connections = new Set<Socket>();
  const tcp: Server = createServer((callerSide) => {
    const parleySide = connect(sipPort, '127.0.0.1');
    for (const s of [callerSide, parleySide]) {
      connections.add(s);
      s.on('error', () => {});
      s.on('close', () => {
        connections.delete(s);
        callerSide.destroy();
        parleySide.destroy();
      });
    }
    const relay = (from: Socket, to: Socket, toParley: boolean) => {
      let buffer = Buffer.alloc(0);
      let order = Promise.resolve();
      from.on('data', (chunk) => {
        buffer = Buffer.concat([buffer, chunk]);
        for (let next = frame(buffer); next.kind !== 'incomplete' && next.kind !== 'invalid'; next = frame(buffer)) {
          buffer = Buffer.from(next.rest);
          if (next.kind === 'keepalive') continue;
          const bytes = next.bytes;
          order = order.then(async () => void to.write(await pass(bytes, toParley)));
        }
      });
    };
    relay(callerSide, parleySide, true);
    relay(parleySide, callerSide, false);
  });
  await new Promise<void>((resolve, reject) => {
    tcp.once('error', reject);
    tcp.listen(front.address().port, '127.0.0.1', () => resolve());
  });

  return {
    port: front.address().port,
    calls,
    close: async () => {
      for (const s of connections) s.destroy();
      await new Promise<void>((resolve) => tcp.close(() => resolve()));
      for (const s of sockets) s.close();
    },
  };
}
