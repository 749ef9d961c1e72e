// RFC 4733 telephone-events (DTMF) in RTP: one key press is a run of packets sharing a timestamp,
// repeated and ended with the E bit set (the end packet itself sent three times). Each press is
// told once, on its first packet.

const DIGITS = '0123456789*#ABCD';

export class TelephoneEvents {
  /** The timestamp of the last press told: its repeats and end packets are the same press. */
  private lastTimestamp: number | undefined;

  /** A telephone-event payload with its RTP timestamp → the key pressed when it is a new press, else undefined. */
  read(payload: Buffer, timestamp: number): string | undefined {
    if (payload.length < 4) return undefined;
    const digit = DIGITS[payload[0]!];
    if (digit === undefined || timestamp === this.lastTimestamp) return undefined;
    this.lastTimestamp = timestamp;
    return digit;
  }
}
