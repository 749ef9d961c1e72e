// One outbound call's INVITE, as the call sees it: our SDP offer sent by the UAC core (uac.ts: its
// transactions, the digest challenge, the CANCEL), given up at the ring timeout or when the call is
// hung up through the API while it rings; the callee's SDP answer starting the media; and what the
// outcome means for the app (answered; busy, no answer, unreachable, rejected). An answer that came
// after we gave up (it crossed our CANCEL), or with media we cannot use, is hung up at once.
import { readOffer, writeOffer } from '../calls/sip/sdp.js';
import { CALL_ID_HEADER } from './core.js';
import type { Dialog, DialogCall } from './dialogs.js';
import type { SipResponse } from './message.js';
import type { InviteFailure } from './options.js';
import type { Headers } from './responses.js';
import { UacInvite, type InviteTarget, type UacFailure, type UacParts } from './uac.js';

export interface InviteEvents {
  /** The callee answered: the call's dialog, its media started. */
  answered(dialog: Dialog): void;
  /** It did not come to a call (the SIP status: 408 when nothing answered). */
  failed(reason: InviteFailure, status: number): void;
}

/** The failure a final status means for the app. */
export function failureOf(status: number, cancelledAtRingTimeout: boolean): InviteFailure {
  if (status === 486 || status === 600) return 'busy';
  if (status === 408 || status === 480 || (status === 487 && cancelledAtRingTimeout)) return 'no_answer';
  return 'rejected';
}

export class OutboundInvite {
  private readonly uac: UacInvite;
  private ringTimer: NodeJS.Timeout | undefined;
  /** Why we gave up: the ring timeout, or the call hung up while it rang. */
  private givenUp: 'ring_timeout' | 'hangup' | undefined;

  constructor(
    private readonly parts: UacParts,
    target: InviteTarget,
    private readonly call: Omit<DialogCall, 'peer' | 'sessionId'> & { ringTimeoutMs: number },
    private readonly events: InviteEvents,
  ) {
    const { transport, conversationId } = call;
    // Our offer's SDP session id, which the dialog's later answers keep (RFC 3264 §8).
    const sessionId = Date.now() % 1e9;
    const sdp = writeOffer({ sessionId, address: parts.core.opts.announcedAddress, rtpPort: transport.rtpPort, rtcpPort: transport.rtcpPort });
    const headers: Headers = [[CALL_ID_HEADER, conversationId], ['Content-Type', 'application/sdp']];
    this.uac = new UacInvite(parts, target, { headers, body: sdp }, { ...call, sessionId }, { answered: (dialog, res) => this.answered(dialog, res), failed: (status, why) => this.failed(status, why) });
  }

  start(): void {
    this.uac.start();
    this.ringTimer = setTimeout(() => this.giveUp('ring_timeout'), this.call.ringTimeoutMs);
  }

  /** Gives up ringing (the call ended through the API). Once answered, the dialog hangs up instead (outboundCalls.ts). */
  hangUp(): void {
    this.giveUp('hangup');
  }

  private giveUp(why: 'ring_timeout' | 'hangup'): void {
    if (this.givenUp) return;
    this.givenUp = why;
    this.uac.giveUp();
  }

  private answered(dialog: Dialog, res: SipResponse): void {
    clearTimeout(this.ringTimer);
    const { transport, conversationId } = this.call;
    transport.sipStatus = res.status;
    const answer = readOffer(res.body.toString('latin1'));
    // Answered after we gave up (the 2xx crossed our CANCEL: as if the CANCEL had worked), or with
    // media we cannot use: hung up at once (the dialog retires itself a transaction's time later).
    if (this.givenUp || !answer.ok) {
      if (!answer.ok) this.parts.core.opts.log.warn({ conversation: conversationId, reason: answer.reason }, 'SIP callee answered with media we cannot use; hanging up');
      this.parts.dialogs.hangUp(dialog);
      return this.events.failed(this.givenUp ? failureOf(487, this.givenUp === 'ring_timeout') : 'media_unacceptable', res.status);
    }
    transport.negotiated(answer.offer);
    this.events.answered(dialog);
  }

  private failed(status: number, why: UacFailure): void {
    clearTimeout(this.ringTimer);
    this.call.transport.sipStatus = status;
    const atRingTimeout = this.givenUp === 'ring_timeout';
    const reason: InviteFailure = why === 'timeout' ? 'unreachable' : why === 'cancelled' ? (atRingTimeout ? 'no_answer' : 'rejected') : failureOf(status, atRingTimeout);
    this.events.failed(reason, status);
  }
}
