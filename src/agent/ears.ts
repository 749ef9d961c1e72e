// What the voice agent hears of the caller, before its stages do: the echo guard (the agent's own
// voice coming back while it speaks is silence to the VAD and the recogniser) and the session's noise
// suppression (for the recogniser only, on the turns' audio: the VAD judges the audio as it came —
// Silero already ignores steady noise, and suppressed babble is cleaner speech to it, bench/noise.ts).
import type { AudioOut } from '../media/audio/format.js';
import type { NoiseReduction } from '../session/session.js';
import type { NoiseSuppressor } from './noise/suppressor.js';
import { TurnSuppressor } from './noise/turnSuppressor.js';
import { EchoGuard } from './turn/echoGuard.js';

export class Ears {
  private readonly echo: EchoGuard;
  private suppressor: TurnSuppressor | undefined;
  /** Ms of the caller's audio heard so far (where a suppressor started mid-call begins its clock). */
  private heardMs = 0;

  constructor(private readonly inputRate: number) {
    this.echo = new EchoGuard(inputRate);
  }

  /** The call's audio out, watched by the echo guard (the agent speaks through what this returns). */
  watch(out: AudioOut): AudioOut {
    return this.echo.watch(out);
  }

  /** Noise suppression from now on with this suppressor (undefined: none). */
  suppressWith(suppressor: NoiseSuppressor | undefined): void {
    this.suppressor?.close();
    this.suppressor = suppressor && new TurnSuppressor(suppressor, this.heardMs, this.inputRate / 1000);
  }

  /** One frame of the caller's audio, in order (`capturedAt`: when it was recorded, if not now): what the VAD judges. */
  hear(frame: Int16Array, capturedAt?: number): Int16Array {
    this.heardMs += (frame.length * 1000) / this.inputRate;
    const heard = this.echo.filter(frame, capturedAt);
    this.suppressor?.heard(heard);
    return heard;
  }

  /** A turn starts with audio from `audioStartMs` on (the suppressor warms up on what came before). */
  turnStarts(audioStartMs: number): void {
    this.suppressor?.turnStarts(audioStartMs);
  }

  /** A turn's audio as the recogniser hears it: noise-suppressed when the session asks. */
  forRecognizer(pcm: Int16Array): Int16Array {
    return this.suppressor ? this.suppressor.process(pcm) : pcm;
  }

  close(): void {
    this.suppressWith(undefined);
  }
}
