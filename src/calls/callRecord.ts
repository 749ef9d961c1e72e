// A call's record in the store: created before the answer (by the call manager), then, as an
// observer of the call, connected, session changes, turns (with history on) and the end, with the
// call's usage and quality figures. Writes never hold the call up; a failed write is logged. The
// end is awaited (a drain waits for it).
import type { FastifyBaseLogger } from 'fastify';
import type { ConversationTurn } from '../agent/types.js';
import { withoutSecrets, type Session } from '../session/session.js';
import type { ConversationStore } from '../storage/conversations.js';
import type { Call, CallObserver } from './call.js';

export class CallRecord implements CallObserver {
  private seq: number;

  constructor(
    private readonly store: ConversationStore,
    private readonly id: string,
    private readonly threadId: string,
    /** Turns the thread already has (a resumed conversation). */
    turnsSoFar: number,
    private readonly log: FastifyBaseLogger,
  ) {
    this.seq = turnsSoFar;
  }

  connected(): void {
    this.write('record not marked active', () => this.store.markActive(this.id));
  }

  sessionChanged(_call: Call, session: Session): void {
    this.write('session not recorded', () => this.store.updateParams(this.id, withoutSecrets(session)));
  }

  turn(call: Call, turn: ConversationTurn): void {
    if (!call.session().history) return;
    const seq = this.seq++;
    this.write('turn not recorded', () => this.store.addTurn(this.threadId, seq, turn.role, turn.text, turn.image));
  }

  ended(call: Call): Promise<void> {
    const state = call.state === 'failed' ? 'failed' : 'ended';
    return this.store.finish(this.id, state, call.endReason ?? 'unknown', call.figures(), call.wireOutcome).catch((err: Error) => this.log.error({ err, conversation: this.id }, 'end not recorded'));
  }

  private write(what: string, op: () => Promise<void>): void {
    op().catch((err: Error) => this.log.error({ err, conversation: this.id }, what));
  }
}
