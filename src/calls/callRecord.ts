// A call's record in the store: created before the answer, then connected, session changes, turns
// (with history on) and the end. Writes never hold the call up; a failed write is logged.
import type { FastifyBaseLogger } from 'fastify';
import type { ConversationTurn } from '../agent/types.js';
import type { Session } from '../session/session.js';
import type { ConversationStore } from '../storage/conversations.js';

export class CallRecord {
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

  sessionChanged(session: Session): void {
    this.write('session not recorded', () => this.store.updateParams(this.id, session));
  }

  turn(turn: ConversationTurn): void {
    const seq = this.seq++;
    this.write('turn not recorded', () => this.store.addTurn(this.threadId, seq, turn.role, turn.text));
  }

  finished(state: 'ended' | 'failed', reason: string): Promise<void> {
    return this.store.finish(this.id, state, reason).catch((err: Error) => this.log.error({ err, conversation: this.id }, 'end not recorded'));
  }

  private write(what: string, op: () => Promise<void>): void {
    op().catch((err: Error) => this.log.error({ err, conversation: this.id }, what));
  }
}
