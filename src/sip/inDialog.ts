// Requests the caller sends inside a call's dialog: a re-INVITE (hold, resume, a moved media
// address), BYE, the NOTIFYs of a transfer's progress (RFC 3515 §2.4.5), and key presses sent as
// SIP INFO (dtmfInfo.ts) rather than in the RTP.
import { readOffer, writeAnswer, type AudioOffer } from '../calls/sip/sdp.js';
import type { SipCore } from './core.js';
import type { Dialogs } from './dialogs.js';
import { DTMF_INFO_TYPES, readDtmfInfo } from './dtmfInfo.js';
import type { Peer } from './listener.js';
import { uriOf, type SipRequest } from './message.js';
import type { AnyServerTransaction, InviteServerTransaction } from './serverTransactions.js';

export class InDialogRequests {
  constructor(
    private readonly core: SipCore,
    private readonly dialogs: Dialogs,
  ) {}

  reInvite(req: SipRequest, peer: Peer, tx: InviteServerTransaction): void {
    const dialog = this.dialogs.of(req);
    if (!dialog || dialog.ended) return this.core.respond(req, peer, 481, 'Call/Transaction Does Not Exist', tx);
    let offer: AudioOffer = dialog.transport.currentOffer;
    if (req.body.length) {
      const read = readOffer(req.body.toString('latin1'));
      // A refused re-offer leaves the call as it was (RFC 3261 §14.2); SRTP is not turned on or off mid-call.
      if (!read.ok) return this.core.respond(req, peer, 488, 'Not Acceptable Here', tx, [['Warning', `304 parley "${read.reason}"`]]);
      if (read.offer.protocol !== offer.protocol) return this.core.respond(req, peer, 488, 'Not Acceptable Here', tx, [['Warning', `304 parley "the call stays ${offer.protocol}"`]]);
      dialog.transport.update(read.offer);
      offer = dialog.transport.currentOffer;
    }
    const contact = req.headers.get('contact');
    if (contact) dialog.remoteTarget = uriOf(contact);
    dialog.sdpVersion++;
    const { transport } = dialog;
    const sdp = writeAnswer({ sessionId: dialog.sessionId, version: dialog.sdpVersion, address: this.core.opts.announcedAddress, rtpPort: transport.rtpPort, rtcpPort: transport.rtcpPort, offer, localCrypto: transport.localCrypto });
    this.dialogs.answer(req, peer, dialog, tx, sdp);
  }

  bye(req: SipRequest, peer: Peer, tx: AnyServerTransaction): void {
    const dialog = this.dialogs.of(req);
    if (!dialog || dialog.ended) return this.core.respond(req, peer, 481, 'Call/Transaction Does Not Exist', tx);
    this.core.respond(req, peer, 200, 'OK', tx);
    this.dialogs.end(dialog);
    dialog.transport.callerEnded('hangup');
  }

  /** INFO: a key press (application/dtmf-relay or application/dtmf) told the call as RFC 4733 ones are. */
  info(req: SipRequest, peer: Peer, tx: AnyServerTransaction): void {
    const dialog = this.dialogs.of(req);
    if (!dialog || dialog.ended) return this.core.respond(req, peer, 481, 'Call/Transaction Does Not Exist', tx);
    // An empty INFO (some phones' keep-alive) is answered and changes nothing.
    if (req.body.length === 0) return this.core.respond(req, peer, 200, 'OK', tx);
    const read = readDtmfInfo(req.headers.get('content-type') ?? '', req.body.toString('latin1'));
    if (read === 'unsupported') return this.core.respond(req, peer, 415, 'Unsupported Media Type', tx, [['Accept', DTMF_INFO_TYPES.join(', ')]]);
    if (read === undefined) return this.core.respond(req, peer, 400, 'Bad Request', tx, [['Warning', '399 parley "no key in the INFO"']]);
    this.core.respond(req, peer, 200, 'OK', tx);
    dialog.transport.keyPressed(read);
  }

  /** A NOTIFY of a transfer's progress: its sipfrag's 2xx means the target answered, and this call ends. */
  notify(req: SipRequest, peer: Peer, tx: AnyServerTransaction): void {
    const dialog = this.dialogs.of(req);
    if (!dialog || dialog.ended) return this.core.respond(req, peer, 481, 'Call/Transaction Does Not Exist', tx);
    this.core.respond(req, peer, 200, 'OK', tx);
    const status = Number(/^SIP\/2\.0 (\d{3})/.exec(req.body.toString('latin1'))?.[1]);
    if (status >= 200 && status < 300) {
      this.core.opts.log.info({ conversation: dialog.conversationId }, 'SIP call transferred');
      void this.core.opts.calls.get(dialog.conversationId)?.end('referred');
    }
  }
}
