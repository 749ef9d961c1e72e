// The agent's audio sent to a client that plays what it receives as it arrives (a WebSocket client:
// audio inside events), paced as a real-time service sends it: in 100 ms pieces, a little ahead of
// the client's playback (`leadMs`), so that a reply can still be cancelled while it is heard and what
// was not sent is simply dropped. The client's playout is kept as a timeline (playoutTimeline.ts):
// that is the AudioOut's queue and its playback start and finish. The wire's encoding is the
// transport's: each piece is handed to `send` when it is due.
import { SAMPLE_RATE, type AudioOut } from '../../media/audio/format.js';
import { PlayoutTimeline } from './playoutTimeline.js';

/** The agent's audio goes out in pieces of this much (48 kHz samples: 100 ms). */
const OUTPUT_PIECE_SAMPLES = 4800;

export interface PacedOutputOptions {
  /** How far ahead of the client's playback the audio is sent; 0: each piece whole, as it comes. */
  leadMs: number;
  /** Sends a piece (48 kHz mono PCM) to the client now. */
  send(pcm: Int16Array): void;
}

export class PacedOutput {
  readonly audioOut: AudioOut;
  private readonly playout = new PlayoutTimeline();
  /** The agent's audio written and not sent yet (48 kHz), in pieces, and how long it plays. */
  private readonly unsent: Int16Array[] = [];
  private unsentMs = 0;
  private pumpTimer: NodeJS.Timeout | undefined;
  /** Told once everything written has been sent (or dropped). */
  private allSent: (() => void)[] = [];
  private closed = false;

  constructor(private readonly opts: PacedOutputOptions) {
    const playout = this.playout;
    const output = this;
    this.audioOut = {
      write: (pcm) => {
        if (this.closed) return;
        // Unpaced, each piece of speech goes out whole, as it was synthesised.
        const piece = this.opts.leadMs === 0 ? pcm.length : OUTPUT_PIECE_SAMPLES;
        for (let at = 0; at < pcm.length; at += piece) {
          this.unsent.push(pcm.subarray(at, at + piece));
          this.unsentMs += (Math.min(piece, pcm.length - at) * 1000) / SAMPLE_RATE;
        }
        this.pump();
      },
      // What was sent is the client's: only what was not sent yet is dropped (an OpenAI client
      // truncates the item itself, to what it played), and the client is taken to stop playing now.
      clear: () => {
        const dropped = this.dropUnsent();
        playout.stop();
        return dropped;
      },
      get queuedMs() {
        return playout.queuedMs + output.unsentMs;
      },
      sent: () => (this.unsent.length ? new Promise<void>((resolve) => this.allSent.push(resolve)) : Promise.resolve()),
      onPlayback: (listener) => playout.onPlayback(listener),
      clientTruncates: true,
    };
  }

  /** Nothing plays after the call's end: what was not sent is dropped, the playback ends. */
  close(): void {
    this.closed = true;
    this.dropUnsent();
    this.playout.stop();
  }

  /** Sends the agent's audio while the client's playback is less than `leadMs` ahead; the rest later. */
  private pump(): void {
    clearTimeout(this.pumpTimer);
    this.pumpTimer = undefined;
    const { leadMs } = this.opts;
    // A piece goes out when it keeps the client at most leadMs ahead (or when nothing is queued).
    const fits = () => leadMs === 0 || this.playout.queuedMs === 0 || this.playout.queuedMs + (this.unsent[0]!.length * 1000) / SAMPLE_RATE <= leadMs;
    while (this.unsent.length && !this.closed && fits()) {
      const pcm = this.unsent.shift()!;
      const ms = (pcm.length * 1000) / SAMPLE_RATE;
      this.unsentMs = this.unsent.length ? this.unsentMs - ms : 0;
      this.opts.send(pcm);
      // The client plays it from now on, after what it was sent before.
      this.playout.sent(ms);
    }
    if (this.unsent.length && !this.closed) {
      this.pumpTimer = setTimeout(() => this.pump(), Math.max(5, this.playout.queuedMs + (this.unsent[0]!.length * 1000) / SAMPLE_RATE - leadMs));
    } else this.tellAllSent();
  }

  /** Drops the audio not sent yet; returns how long it would have played. */
  private dropUnsent(): number {
    const dropped = this.unsentMs;
    this.unsent.length = 0;
    this.unsentMs = 0;
    clearTimeout(this.pumpTimer);
    this.pumpTimer = undefined;
    this.tellAllSent();
    return dropped;
  }

  private tellAllSent(): void {
    const waiting = this.allSent;
    this.allSent = [];
    for (const resolve of waiting) resolve();
  }
}
