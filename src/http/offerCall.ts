// An SDP offer becomes a call on a WebRTC transport: what both calls routes (the Orga JSON form and
// OpenAI's SDP / multipart forms) do once their bodies are read. Each route shapes the failures its
// clients read.
import { CallCapacityExceeded, CallLimitExceeded, type CallRequest } from '../calls/callManager.js';
import { TransportRejected } from '../calls/transport.js';
import { readOffer } from '../calls/webrtc/sdpOffer.js';
import type { Services } from '../services.js';

/** A candidate given beside the SDP, as browsers' RTCIceCandidate.toJSON() writes it. */
export interface OfferCandidate {
  candidate?: string | null;
  sdpMid?: string | null;
  sdpMLineIndex?: number | null;
}

/** The errors a route answers with, in its clients' shapes. */
export interface OfferFailures {
  /** The SDP cannot be used (what is wrong with it, each a sentence). */
  unusable(problems: string[]): Error;
  /** The WebRTC stack could not apply it. */
  rejected(message: string): Error;
  /** The node is full or shutting down (503 with Retry-After). */
  busy(message: string): Error;
  /** The caller is at one of its own limits (429 with Retry-After). */
  limited(err: CallLimitExceeded): Error;
}

export async function callFromOffer(
  services: Services,
  request: CallRequest & { sdp: string; candidates?: OfferCandidate[] },
  failures: OfferFailures,
): Promise<{ answerSdp: string; conversationId: string }> {
  const reading = readOffer(request.sdp);
  if (!reading.ok) throw failures.unusable(reading.problems);
  const { plan } = reading;
  // Candidates are matched to the offer's m-lines by mid, or by index when the mid is absent.
  const candidates = (request.candidates ?? [])
    .map((c) => ({ candidate: c.candidate ?? '', mid: c.sdpMid ?? (c.sdpMLineIndex != null ? plan.mids[c.sdpMLineIndex] : undefined) ?? plan.audioMid }))
    .filter((c) => c.candidate.trim() !== '');
  const { sdp: _sdp, candidates: _candidates, ...call } = request;
  const open = services.webrtc.forOffer({ sdp: request.sdp, plan, candidates, receiveVideo: request.session.modalities.includes('video') });
  try {
    const { accepted, conversationId } = await services.calls.create(call, open);
    return { answerSdp: accepted, conversationId };
  } catch (err) {
    if (err instanceof CallLimitExceeded) throw failures.limited(err);
    if (err instanceof CallCapacityExceeded) throw failures.busy(err.message);
    if (err instanceof TransportRejected) throw failures.rejected(err.message);
    throw err;
  }
}
