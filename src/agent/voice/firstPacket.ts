// A traced turn's span ends when the first packet of its reply leaves: the next start of playback.
import type { TurnTrace } from '../../observability/callTrace.js';

export class FirstPacket {
  /** The traced turn whose reply's first packet is awaited: the next start of playback is it. */
  private awaited: TurnTrace | undefined;

  /**
   * A reply's first audio is queued: its turn's span ends at the next start of playback, unless an
   * earlier reply is still playing (`behindAnother`: the new audio then follows it with no new start,
   * and the span ends here, saying so).
   */
  await(turn: TurnTrace, behindAnother: boolean): void {
    if (behindAnother) {
      turn.set({ 'parley.turn.first_packet_seen': false });
      return turn.end();
    }
    this.awaited?.abandon('superseded');
    this.awaited = turn;
  }

  /** Playback started: the awaited turn's first packet left. */
  playbackStarted(): void {
    const turn = this.awaited;
    this.awaited = undefined;
    turn?.reached('first_packet', performance.now());
    turn?.end();
  }

  /** The call ended before the packet left. */
  close(): void {
    this.awaited?.abandon('call_ended');
  }
}
