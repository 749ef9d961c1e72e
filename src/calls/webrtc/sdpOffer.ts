// Reads a client's SDP offer into what the server's peer needs, or says plainly why it cannot be used.
import { parse } from 'sdp-transform';
import type { VideoCodec } from '../../media/videoReceiver.js';

export interface OfferPlan {
  audioMid: string;
  opusPayloadType: number;
  /** The offer's first video m-line, when it has one. */
  video?: { mid: string; codecs: VideoCodec[] };
  hasDataChannel: boolean;
  /** The mid of each m-line, by index (for candidates that name only sdpMLineIndex). */
  mids: (string | undefined)[];
}

export type OfferReading = { ok: true; plan: OfferPlan } | { ok: false; problems: string[] };

/** Remote candidates an offer may carry, in offer.candidates and in the SDP alike. */
export const MAX_OFFER_CANDIDATES = 64;

export function readOffer(sdp: string): OfferReading {
  const inSdp = sdp.match(/^a=candidate:/gm)?.length ?? 0;
  if (inSdp > MAX_OFFER_CANDIDATES) {
    return { ok: false, problems: [`the SDP carries ${inSdp} a=candidate lines; at most ${MAX_OFFER_CANDIDATES} are accepted`] };
  }
  let session: ReturnType<typeof parse>;
  try {
    session = parse(sdp);
  } catch (err) {
    return { ok: false, problems: [`the SDP cannot be parsed: ${(err as Error).message}`] };
  }
  const problems: string[] = [];
  if (session.version !== 0 || !Array.isArray(session.media)) problems.push('the SDP does not start with v=0');
  const media = session.media ?? [];
  if (!media.length) problems.push('the SDP has no m-lines');

  const audio = media.find((m) => m.type === 'audio' && m.port !== 0);
  let opusPayloadType: number | undefined;
  if (!audio) {
    problems.push('the SDP has no audio m-line');
  } else {
    opusPayloadType = audio.rtp?.find((r) => r.codec.toLowerCase() === 'opus' && r.rate === 48000)?.payload;
    if (opusPayloadType === undefined) problems.push('the audio m-line does not offer Opus (opus/48000/2)');
    if (audio.mid === undefined) problems.push('the audio m-line has no a=mid');
  }
  for (const [i, m] of media.entries()) {
    if (m.port === 0) continue;
    if (!(m.iceUfrag ?? session.iceUfrag) || !(m.icePwd ?? session.icePwd)) {
      problems.push(`m-line ${i} (${m.type}) has no ICE credentials (a=ice-ufrag / a=ice-pwd)`);
    }
    if (!(m.fingerprint ?? session.fingerprint)) problems.push(`m-line ${i} (${m.type}) has no DTLS fingerprint (a=fingerprint)`);
  }
  if (problems.length || !audio || opusPayloadType === undefined) return { ok: false, problems };

  const videoLine = media.find((m) => m.type === 'video' && m.port !== 0 && m.mid !== undefined);
  const video = videoLine
    ? {
        mid: String(videoLine.mid),
        codecs: (videoLine.rtp ?? [])
          .filter((r) => /^(vp8|h264)$/i.test(r.codec))
          .map((r) => ({ payloadType: r.payload, name: r.codec.toUpperCase() as VideoCodec['name'] })),
      }
    : undefined;
  return {
    ok: true,
    plan: {
      audioMid: String(audio.mid),
      opusPayloadType,
      ...(video ? { video } : {}),
      hasDataChannel: media.some((m) => m.type === 'application' && m.port !== 0),
      mids: media.map((m) => (m.mid === undefined ? undefined : String(m.mid))),
    },
  };
}
