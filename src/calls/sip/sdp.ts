// SDP for plain RTP/AVP phone calls (RFC 4566, offer/answer RFC 3264): what a caller's offer asks
// for — where its audio goes, which G.711 flavour and telephone-event payload it speaks, its
// direction — and the answer that takes one codec of it.
import { isIP } from 'node:net';

export type G711 = 'pcmu' | 'pcma';
export type Direction = 'sendrecv' | 'sendonly' | 'recvonly' | 'inactive';

export interface AudioOffer {
  /** Where the caller wants our RTP (0.0.0.0 on hold, RFC 2543 style). */
  address: string;
  port: number;
  /** Where the caller wants our RTCP (a=rtcp, else the next port). */
  rtcpPort: number;
  codec: G711;
  payloadType: number;
  /** RFC 4733 telephone-event's payload type, when offered at 8 kHz. */
  dtmfPayloadType: number | undefined;
  direction: Direction;
  /** Its ptime, when it asked for one. */
  ptime: number | undefined;
}

export type OfferReading = { ok: true; offer: AudioOffer } | { ok: false; reason: string };

/** Static payload types (RFC 3551): 0 is PCMU, 8 is PCMA. */
const STATIC: Record<number, G711> = { 0: 'pcmu', 8: 'pcma' };

/** The first audio stream of an offer we can take: RTP/AVP with PCMU or PCMA. */
export function readOffer(sdp: string): OfferReading {
  if (!sdp.startsWith('v=0')) return { ok: false, reason: 'not SDP' };
  const lines = sdp.split(/\r?\n/).map((l) => l.trim()).filter(Boolean);
  let sessionAddress: string | undefined;
  let sessionDirection: Direction = 'sendrecv';
  // Sections: the session part, then one per m= line.
  const sections: string[][] = [[]];
  for (const line of lines) {
    if (line.startsWith('m=')) sections.push([]);
    sections[sections.length - 1]!.push(line);
  }
  for (const line of sections[0]!) {
    if (line.startsWith('c=')) sessionAddress = connectionAddress(line);
    const dir = direction(line);
    if (dir) sessionDirection = dir;
  }
  let sawAudio = false;
  for (const section of sections.slice(1)) {
    const m = /^m=audio (\d{1,5})(?:\/\d+)? (RTP\/AVP|RTP\/AVPF) ([\d ]+)$/.exec(section[0]!);
    if (!m) continue;
    sawAudio = true;
    const port = Number(m[1]);
    if (port === 0 || port > 65535) continue;
    const formats = m[3]!.trim().split(/\s+/).map(Number);
    const rtpmap = new Map<number, string>();
    let address = sessionAddress;
    let dir = sessionDirection;
    let rtcpPort = port + 1;
    let ptime: number | undefined;
    for (const line of section.slice(1)) {
      const map = /^a=rtpmap:(\d{1,3}) ([^/\s]+)\/(\d+)/.exec(line);
      if (map) rtpmap.set(Number(map[1]), `${map[2]!.toLowerCase()}/${map[3]}`);
      if (line.startsWith('c=')) address = connectionAddress(line);
      const rtcp = /^a=rtcp:(\d{1,5})/.exec(line);
      if (rtcp && Number(rtcp[1]) > 0 && Number(rtcp[1]) <= 65535) rtcpPort = Number(rtcp[1]);
      const pt = /^a=ptime:(\d{1,3})/.exec(line);
      if (pt) ptime = Number(pt[1]);
      dir = direction(line) ?? dir;
    }
    if (!address) continue;
    const codecOf = (pt: number): G711 | undefined => {
      const named = rtpmap.get(pt);
      if (named === 'pcmu/8000') return 'pcmu';
      if (named === 'pcma/8000') return 'pcma';
      return named === undefined ? STATIC[pt] : undefined;
    };
    // The caller's order is its preference (RFC 3264 §6.1).
    const chosen = formats.find((pt) => codecOf(pt) !== undefined);
    if (chosen === undefined) continue;
    const dtmf = formats.find((pt) => rtpmap.get(pt) === 'telephone-event/8000');
    return { ok: true, offer: { address, port, rtcpPort, codec: codecOf(chosen)!, payloadType: chosen, dtmfPayloadType: dtmf, direction: dir, ptime } };
  }
  return { ok: false, reason: sawAudio ? 'no PCMU or PCMA audio offered over RTP/AVP' : 'no audio stream offered' };
}

function connectionAddress(line: string): string | undefined {
  const m = /^c=IN IP[46] ([^\s/]+)/.exec(line);
  return m && isIP(m[1]!) ? m[1] : undefined;
}

function direction(line: string): Direction | undefined {
  const m = /^a=(sendrecv|sendonly|recvonly|inactive)$/.exec(line);
  return m?.[1] as Direction | undefined;
}

/** Our direction answering the caller's (RFC 3264 §6.1): its sendonly is our recvonly. */
export function answerDirection(offered: Direction): Direction {
  return offered === 'sendonly' ? 'recvonly' : offered === 'recvonly' ? 'sendonly' : offered;
}

export interface AnswerParams {
  /** The answer's session id (kept for the dialog) and version (one more for each new answer). */
  sessionId: number;
  version: number;
  address: string;
  rtpPort: number;
  rtcpPort: number;
  offer: AudioOffer;
}

/** The answer to `offer`: its codec, and telephone-event when it offered it. */
export function writeAnswer({ sessionId, version, address, rtpPort, rtcpPort, offer }: AnswerParams): string {
  const family = address.includes(':') ? 'IP6' : 'IP4';
  const formats = [offer.payloadType, ...(offer.dtmfPayloadType === undefined ? [] : [offer.dtmfPayloadType])];
  const lines = [
    'v=0',
    `o=parley ${sessionId} ${version} IN ${family} ${address}`,
    's=parley',
    `c=IN ${family} ${address}`,
    't=0 0',
    `m=audio ${rtpPort} RTP/AVP ${formats.join(' ')}`,
    `a=rtpmap:${offer.payloadType} ${offer.codec === 'pcmu' ? 'PCMU' : 'PCMA'}/8000`,
    ...(offer.dtmfPayloadType === undefined ? [] : [`a=rtpmap:${offer.dtmfPayloadType} telephone-event/8000`, `a=fmtp:${offer.dtmfPayloadType} 0-15`]),
    'a=ptime:20',
    `a=rtcp:${rtcpPort}`,
    `a=${answerDirection(offer.direction)}`,
  ];
  return lines.join('\r\n') + '\r\n';
}
