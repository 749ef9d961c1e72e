// Makes WebRTC transports from clients' offers: the offer's candidates filtered first (the server
// must not be told where to send its checks), a peer of the configured stack per call, and the SDP
// answer as what accepting the client's request yields.
import type { FastifyBaseLogger } from 'fastify';
import type { Metrics } from '../../observability/metrics.js';
import { TransportRejected, type PendingTransport } from '../transport.js';
import type { CandidateFilter } from './candidateFilter.js';
import type { PeerFactory, RemoteCandidate } from './peer/types.js';
import type { OfferPlan } from './sdpOffer.js';
import type { OpusEncoderOptions } from '../../media/opusCodec.js';
import { WebRtcTransport } from './webrtcTransport.js';

export interface ClientOffer {
  sdp: string;
  plan: OfferPlan;
  /** Candidates given beside the SDP (the Orga form's offer.candidates). */
  candidates: RemoteCandidate[];
  receiveVideo: boolean;
}

export interface WebRtcTransportsOptions {
  peers: PeerFactory;
  candidates: CandidateFilter;
  metrics: Metrics;
  log: FastifyBaseLogger;
  /** Opus encoder complexity of the agents' voices: OPUS_COMPLEXITY, lowered under load. */
  opusComplexity?: OpusEncoderOptions['complexity'];
}

export class WebRtcTransports {
  constructor(private readonly opts: WebRtcTransportsOptions) {}

  /** The transport a call made for this offer runs on; accepting it answers the offer (SDP). */
  forOffer(offer: ClientOffer): (callId: string) => PendingTransport<string> {
    return (callId) => {
      const { metrics, log } = this.opts;
      const filtered = this.opts.candidates.filterOffer(offer.sdp, offer.candidates);
      for (const d of filtered.dropped) metrics.iceCandidatesDropped.inc({ reason: d.reason });
      log.debug({ conversation: callId, given: filtered.given, dropped: filtered.dropped }, 'remote candidates given to the WebRTC stack');
      const transport = new WebRtcTransport(this.opts.peers.create(callId), offer.plan, this.opts.opusComplexity);
      return {
        transport,
        accept: () =>
          transport
            .answer({ sdp: filtered.sdp, plan: offer.plan, candidates: filtered.candidates, receiveVideo: offer.receiveVideo })
            .catch((err: Error) => {
              throw new TransportRejected(err.message);
            }),
      };
    };
  }
}
