// A SIP callee written here, for outbound calls whose point is Parley's side (placement, workers,
// caps, setup time): a UDP socket that answers each INVITE at once — 180, then 200 OK with PCMU SDP
// (`answer`), or 180 alone, ringing until a CANCEL (200 and 487 to it) — and 200 to each BYE. It
// notes where each request came from. Real phones (baresip, linphonec) are in sip-outbound.test.ts.
import { createSocket } from 'node:dgram';

export interface SipPhone {
  port: number;
  /** Each request's method and the port it came from, in order. */
  heard: { method: string; fromPort: number }[];
  close(): void;
}

const SDP = 'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 9 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\na=sendrecv\r\n';

export async function startSipPhone(behaviour: 'answer' | 'ring'): Promise<SipPhone> {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
  const port = socket.address().port;
  const heard: SipPhone['heard'] = [];
  socket.on('message', (m, from) => {
    const req = m.toString('latin1');
    const method = /^([A-Z]+) /.exec(req)?.[1];
    if (!method) return;
    heard.push({ method, fromPort: from.port });
    const header = (name: string) => new RegExp(`^${name}: .*$`, 'mi').exec(req)?.[0] ?? '';
    const to = /;tag=/.test(header('To')) ? header('To') : `${header('To')};tag=phone`;
    const reply = (status: string, cseq = header('CSeq'), body = '') =>
      socket.send(
        [`SIP/2.0 ${status}`, ...req.match(/^Via: .*$/gim)!, header('From'), to, header('Call-ID'), cseq, `Contact: <sip:phone@127.0.0.1:${port}>`, ...(body ? ['Content-Type: application/sdp'] : []), `Content-Length: ${body.length}`, '', body].join('\r\n'),
        from.port,
        from.address,
      );
    if (method === 'INVITE') {
      reply('180 Ringing');
      if (behaviour === 'answer') reply('200 OK', header('CSeq'), SDP);
    }
    if (method === 'CANCEL') {
      reply('200 OK');
      reply('487 Request Terminated', header('CSeq').replace('CANCEL', 'INVITE'));
    }
    if (method === 'BYE') reply('200 OK');
  });
  return { port, heard, close: () => socket.close() };
}
