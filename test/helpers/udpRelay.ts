// A UDP relay on loopback between a WebRTC client and the server's media port, for tests that need
// the real network path to misbehave: the client is given the relay's address as the server's only
// candidate (pointAnswerHere), the server learns the relay's as the client's (peer-reflexive, from
// its checks); the relay forwards both ways, drops client → server RTP when asked, and counts the
// RTCP it carries (SRTCP leaves each packet's first 8 bytes, header and sender SSRC, in the clear).
import { createSocket, type RemoteInfo } from 'node:dgram';

export interface UdpRelay {
  /** The server's answer with its candidates pointed at the relay (the relay forwards to the first). */
  pointAnswerHere(sdp: string): string;
  /** Client → server RTP packets that reached the relay, and how many of them it dropped. */
  rtpFromClient(): number;
  droppedFromClient(): number;
  /** The client's RTCP reports (SR or RR) carrying reception report blocks. */
  reportsFromClient(): number;
  /** The server's RTCP sender reports. */
  senderReportsFromServer(): number;
  close(): void;
}

/** RFC 7983's demultiplexing: RTP and RTCP start 128–191; RTCP's second byte is its packet type 192–223. */
const isRtpOrRtcp = (p: Buffer) => p.length >= 8 && p[0]! >= 128 && p[0]! <= 191;
const isRtcp = (p: Buffer) => isRtpOrRtcp(p) && p[1]! >= 192 && p[1]! <= 223;
const RTCP_SR = 200;
const RTCP_RR = 201;

/** Starts a relay; `dropEvery` n drops every n-th client → server RTP packet (none by default). */
export async function startRelay(opts: { dropEvery?: number } = {}): Promise<UdpRelay> {
  const front = createSocket('udp4');
  const back = createSocket('udp4');
  await Promise.all([front, back].map((s) => new Promise<void>((resolve) => s.bind(0, '127.0.0.1', resolve))));
  let server: { address: string; port: number } | undefined;
  let client: RemoteInfo | undefined;
  let rtp = 0;
  let dropped = 0;
  let clientReports = 0;
  let serverSenderReports = 0;

  front.on('message', (packet, from) => {
    client = from;
    if (!server) return;
    if (isRtcp(packet)) {
      if ((packet[1] === RTCP_SR || packet[1] === RTCP_RR) && (packet[0]! & 0x1f) > 0) clientReports++;
    } else if (isRtpOrRtcp(packet)) {
      rtp++;
      if (opts.dropEvery && rtp % opts.dropEvery === 0) {
        dropped++;
        return;
      }
    }
    back.send(packet, server.port, server.address);
  });
  back.on('message', (packet) => {
    if (!client) return;
    if (isRtcp(packet) && packet[1] === RTCP_SR) serverSenderReports++;
    front.send(packet, client.port, client.address);
  });

  const relayPort = front.address().port;
  return {
    pointAnswerHere(sdp) {
      const candidate = /^a=candidate:\S+ \d+ udp \d+ (\S+) (\d+) typ host/im.exec(sdp);
      if (!candidate) throw new Error(`the answer has no UDP host candidate:\n${sdp}`);
      server = { address: candidate[1]!, port: Number(candidate[2]) };
      return sdp.replace(/^(a=candidate:\S+ \d+ udp \d+ )\S+ \d+( typ host.*)$/gim, `$1127.0.0.1 ${relayPort}$2`);
    },
    rtpFromClient: () => rtp,
    droppedFromClient: () => dropped,
    reportsFromClient: () => clientReports,
    senderReportsFromServer: () => serverSenderReports,
    close() {
      front.close();
      back.close();
    },
  };
}
