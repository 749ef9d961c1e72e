// The WebRTC door: an SDP offer becomes a call on a WebRTC transport, for both calls routes (the
// Orga JSON form and OpenAI's SDP / multipart forms) once their bodies are read. The call is opened
// as every door opens one (calls/door.ts); a node without room offers the request, as it came, to
// another node (nodeForwarding.ts), and a refusal is answered in the route's error shape
// (doorRefusals.ts).
import type { FastifyRequest } from 'fastify';
import type { CallRequest } from '../calls/callManager.js';
import { openCall } from '../calls/door.js';
import { readOffer } from '../calls/webrtc/sdpOffer.js';
import type { Services } from '../services.js';
import { httpRefusal, type ErrorForm } from './doorRefusals.js';
import { placeRequestElsewhere, type NodeAnswer } from './nodeForwarding.js';

/** A candidate given beside the SDP, as browsers' RTCIceCandidate.toJSON() writes it. */
export interface OfferCandidate {
  candidate?: string | null;
  sdpMid?: string | null;
  sdpMLineIndex?: number | null;
}

/** What the route answers in its own words: an offer that cannot be used, or that the WebRTC stack refused. */
export interface OfferFailures {
  form: ErrorForm;
  /** The SDP cannot be used (what is wrong with it, each a sentence). */
  unusable(problems: string[]): Error;
  /** The WebRTC stack could not apply it. */
  rejected(message: string): Error;
}

/** The call answered here (its SDP answer), or the answer of the node that took it. */
export type OfferOutcome = { answerSdp: string; conversationId: string } | { placed: NodeAnswer };

export async function callFromOffer(
  services: Services,
  req: FastifyRequest,
  request: CallRequest & { sdp: string; candidates?: OfferCandidate[] },
  failures: OfferFailures,
): Promise<OfferOutcome> {
  const reading = readOffer(request.sdp);
  if (!reading.ok) throw failures.unusable(reading.problems);
  const { plan } = reading;
  // Candidates are matched to the offer's m-lines by mid, or by index when the mid is absent.
  const candidates = (request.candidates ?? [])
    .map((c) => ({ candidate: c.candidate ?? '', mid: c.sdpMid ?? (c.sdpMLineIndex != null ? plan.mids[c.sdpMLineIndex] : undefined) ?? plan.audioMid }))
    .filter((c) => c.candidate.trim() !== '');
  const { sdp: _sdp, candidates: _candidates, ...call } = request;
  const elsewhere = placeRequestElsewhere(services, req, { door: 'webrtc', log: req.log });
  const opened = await openCall(services.calls, {
    request: call,
    open: services.webrtc.forOffer({ sdp: request.sdp, plan, candidates, receiveVideo: request.session.modalities.includes('video') }),
    ...(elsewhere ? { elsewhere } : {}),
  });
  if (opened.ok) return { answerSdp: opened.accepted, conversationId: opened.call.id };
  const { refusal } = opened;
  if ((refusal.kind === 'full' || refusal.kind === 'loaded') && refusal.placed) return { placed: refusal.placed };
  if (refusal.kind === 'rejected') throw failures.rejected(refusal.message);
  throw httpRefusal(failures.form, refusal, services.metrics);
}
