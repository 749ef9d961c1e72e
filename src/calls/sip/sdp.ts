// SDP for phone calls (RFC 4566, offer/answer RFC 3264): what a caller's offer asks for — where its
// audio goes, which codec (G.711 or Opus) and telephone-event payload it speaks, its direction, and
// for SRTP (RTP/SAVP) the key it sends with (SDES, RFC 4568) — and the answer that takes one codec of
// it (with our own key for SRTP).
import { isIP } from 'node:net';
import { SRTP_KEY_BYTES, SRTP_SALT_BYTES } from '../../media/srtp.js';

/** The codecs a phone call may use: G.711's two laws at 8 kHz, and Opus (RFC 7587) when the caller offers it. */
export type SipCodec = 'pcmu' | 'pcma' | 'opus';
export type Direction = 'sendrecv' | 'sendonly' | 'recvonly' | 'inactive';

/** The one SRTP crypto suite taken (RFC 4568 §6.2.1), the one every SRTP phone and trunk offers. */
export const SRTP_SUITE = 'AES_CM_128_HMAC_SHA1_80';

/** An SDES key: the crypto attribute's tag and the master key and salt it carries. */
export interface SdesKey {
  tag: number;
  key: Buffer;
  salt: Buffer;
}

export interface AudioOffer {
  /** RTP/AVP (plain RTP), or RTP/SAVP (SRTP keyed by `crypto`); the feedback profiles (…F) are answered without the F. */
  protocol: 'RTP/AVP' | 'RTP/SAVP';
  /** The caller's SRTP key (RTP/SAVP only). */
  crypto?: SdesKey;
  /** Where the caller wants our RTP (0.0.0.0 on hold, RFC 2543 style). */
  address: string;
  port: number;
  /** Where the caller wants our RTCP (a=rtcp, else the next port). */
  rtcpPort: number;
  codec: SipCodec;
  payloadType: number;
  /** RFC 4733 telephone-event's payload type and clock rate, when offered. */
  dtmfPayloadType: number | undefined;
  dtmfClockRate?: number;
  /** RFC 3389 comfort noise's payload type (CN at the codec's 8 kHz clock), when offered with G.711. */
  comfortNoisePayloadType?: number;
  direction: Direction;
  /** Its ptime, when it asked for one. */
  ptime: number | undefined;
}

export type OfferReading = { ok: true; offer: AudioOffer } | { ok: false; reason: string };

/** Static payload types (RFC 3551): 0 is PCMU, 8 is PCMA. */
const STATIC: Record<number, SipCodec> = { 0: 'pcmu', 8: 'pcma' };

/** What each codec is called in an rtpmap (name/clock rate, lower case). */
const RTPMAP_NAMES: Record<string, SipCodec> = { 'pcmu/8000': 'pcmu', 'pcma/8000': 'pcma', 'opus/48000': 'opus' };

/** Each codec's RTP clock rate (Opus's is always 48 kHz, RFC 7587 §4.1). */
export const CLOCK_RATE: Record<SipCodec, number> = { pcmu: 8000, pcma: 8000, opus: 48_000 };

/** The first audio stream of an offer we can take: RTP/AVP with PCMU, PCMA or Opus, in the caller's order of preference. */
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
  let noCrypto = false;
  for (const section of sections.slice(1)) {
    const m = /^m=audio (\d{1,5})(?:\/\d+)? (RTP\/S?AVPF?) ([\d ]+)$/.exec(section[0]!);
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
    const protocol = m[2]!.startsWith('RTP/SAVP') ? 'RTP/SAVP' : 'RTP/AVP';
    let crypto: SdesKey | undefined;
    for (const line of section.slice(1)) {
      crypto ??= protocol === 'RTP/SAVP' ? sdesKey(line) : undefined;
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
    if (protocol === 'RTP/SAVP' && !crypto) {
      noCrypto = true;
      continue;
    }
    const codecOf = (pt: number): SipCodec | undefined => {
      const named = rtpmap.get(pt);
      return named === undefined ? (pt < 96 ? STATIC[pt] : undefined) : RTPMAP_NAMES[named];
    };
    // The caller's order is its preference (RFC 3264 §6.1).
    const chosen = formats.find((pt) => codecOf(pt) !== undefined);
    if (chosen === undefined) continue;
    const codec = codecOf(chosen)!;
    // Key presses should ride on the codec's clock (RFC 4733 §2.1); phones offering Opus often put
    // them at 8 kHz all the same, and a press is read the same at any rate: take that too.
    const events = formats.filter((pt) => rtpmap.get(pt)?.startsWith('telephone-event/'));
    const dtmf = events.find((pt) => rtpmap.get(pt) === `telephone-event/${CLOCK_RATE[codec]}`) ?? events[0];
    const dtmfClockRate = dtmf === undefined ? undefined : Number(rtpmap.get(dtmf)!.split('/')[1]);
    // Comfort noise rides on the codec's clock: G.711's 8 kHz (static payload type 13, or an rtpmap).
    const comfortNoise = codec === 'opus' ? undefined : formats.find((pt) => (rtpmap.get(pt) ?? (pt === 13 ? 'cn/8000' : '')) === 'cn/8000');
    const cn = comfortNoise === undefined ? {} : { comfortNoisePayloadType: comfortNoise };
    return { ok: true, offer: { protocol, ...(crypto ? { crypto } : {}), address, port, rtcpPort, codec, payloadType: chosen, dtmfPayloadType: dtmf, dtmfClockRate, ...cn, direction: dir, ptime } };
  }
  if (noCrypto) return { ok: false, reason: `no SRTP key offered with ${SRTP_SUITE}` };
  return { ok: false, reason: sawAudio ? 'no PCMU, PCMA or Opus audio offered over RTP/AVP or RTP/SAVP' : 'no audio stream offered' };
}

/** An `a=crypto` line with our suite and an inline key of the right length (session parameters ignored). */
function sdesKey(line: string): SdesKey | undefined {
  const m = /^a=crypto:(\d{1,9}) (\S+) inline:([A-Za-z0-9+/]+={0,2})(?:\|\S*)?(?:\s.*)?$/.exec(line);
  if (!m || m[2] !== SRTP_SUITE) return undefined;
  const bytes = Buffer.from(m[3]!, 'base64');
  if (bytes.length !== SRTP_KEY_BYTES + SRTP_SALT_BYTES) return undefined;
  return { tag: Number(m[1]), key: bytes.subarray(0, SRTP_KEY_BYTES), salt: bytes.subarray(SRTP_KEY_BYTES) };
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
  /** Our SRTP key, for an RTP/SAVP offer (its tag is the offer's). */
  localCrypto?: { key: Buffer; salt: Buffer };
}

/** The answer to `offer`: its codec, and telephone-event and comfort noise when it offered them. */
export function writeAnswer({ sessionId, version, address, rtpPort, rtcpPort, offer, localCrypto }: AnswerParams): string {
  const family = address.includes(':') ? 'IP6' : 'IP4';
  const cn = offer.comfortNoisePayloadType;
  const formats = [offer.payloadType, ...(offer.dtmfPayloadType === undefined ? [] : [offer.dtmfPayloadType]), ...(cn === undefined ? [] : [cn])];
  const lines = [
    'v=0',
    `o=parley ${sessionId} ${version} IN ${family} ${address}`,
    's=parley',
    `c=IN ${family} ${address}`,
    't=0 0',
    `m=audio ${rtpPort} ${offer.protocol} ${formats.join(' ')}`,
    ...codecLines(offer),
    ...(offer.dtmfPayloadType === undefined ? [] : [`a=rtpmap:${offer.dtmfPayloadType} telephone-event/${offer.dtmfClockRate ?? CLOCK_RATE[offer.codec]}`, `a=fmtp:${offer.dtmfPayloadType} 0-15`]),
    ...(cn === undefined ? [] : [`a=rtpmap:${cn} CN/8000`]),
    'a=ptime:20',
    `a=rtcp:${rtcpPort}`,
    `a=${answerDirection(offer.direction)}`,
    ...(offer.crypto && localCrypto ? [`a=crypto:${offer.crypto.tag} ${SRTP_SUITE} inline:${Buffer.concat([localCrypto.key, localCrypto.salt]).toString('base64')}`] : []),
  ];
  return lines.join('\r\n') + '\r\n';
}

function codecLines({ codec, payloadType }: AudioOffer): string[] {
  if (codec === 'opus') {
    // Mono voice both ways, with in-band FEC for lossy lines (RFC 7587 §6.1).
    return [`a=rtpmap:${payloadType} opus/48000/2`, `a=fmtp:${payloadType} useinbandfec=1;stereo=0;sprop-stereo=0`];
  }
  return [`a=rtpmap:${payloadType} ${codec === 'pcmu' ? 'PCMU' : 'PCMA'}/8000`];
}

/** The payload types of our own offer (an outbound call): Opus, G.711's two laws, key presses, comfort noise. */
const OFFER_OPUS_PT = 111;
const OFFER_DTMF_PT = 101;

export interface OfferParams {
  sessionId: number;
  address: string;
  rtpPort: number;
  rtcpPort: number;
}

/**
 * Our offer for an outbound call (plain RTP): Opus first (wideband, FEC), then PCMU and PCMA, which
 * every phone and trunk takes, RFC 4733 key presses and RFC 3389 comfort noise. The callee's answer
 * names the codec taken, read by readOffer like an offer (the same m= line, one codec first).
 */
export function writeOffer({ sessionId, address, rtpPort, rtcpPort }: OfferParams): string {
  const family = address.includes(':') ? 'IP6' : 'IP4';
  return [
    'v=0',
    `o=parley ${sessionId} 1 IN ${family} ${address}`,
    's=parley',
    `c=IN ${family} ${address}`,
    't=0 0',
    `m=audio ${rtpPort} RTP/AVP ${OFFER_OPUS_PT} 0 8 ${OFFER_DTMF_PT} 13`,
    `a=rtpmap:${OFFER_OPUS_PT} opus/48000/2`,
    `a=fmtp:${OFFER_OPUS_PT} useinbandfec=1;stereo=0;sprop-stereo=0`,
    'a=rtpmap:0 PCMU/8000',
    'a=rtpmap:8 PCMA/8000',
    `a=rtpmap:${OFFER_DTMF_PT} telephone-event/8000`,
    `a=fmtp:${OFFER_DTMF_PT} 0-15`,
    'a=rtpmap:13 CN/8000',
    'a=ptime:20',
    `a=rtcp:${rtcpPort}`,
    'a=sendrecv',
  ].join('\r\n') + '\r\n';
}
