// The echo guard: while the agent's voice is on the wire, the caller's microphone may hear it back (a
// client without echo cancellation: a speakerphone, some browsers and SIP phones). Left alone, the
// VAD takes that echo for the caller: the agent interrupts itself (barge-in) and then answers its own
// words. The guard compares each 20 ms of the caller's audio with what was sent in the last 400 ms
// (the echo's delay: the caller's jitter buffer, its loudspeaker and microphone, the network both
// ways) and learns how much of the agent's level comes back (the coupling: about 0 with echo
// cancellation, −10 dB for a phone on a desk). It does so in two bands — the whole signal, and its
// first difference (the highs: an "s" is quiet overall but loud there, where the agent's vowels are
// not) — so that a caller's speech shows in either. Audio no louder than the echo it predicts in both
// bands, with a margin, is silenced before the VAD and the recogniser hear it (merely damped, speech
// is still speech to Silero); audio louder in either is the caller speaking over the agent and passes
// untouched, and so does everything after it for a moment (the caller's quieter sounds). With no
// agent audio in the window the guard does nothing, and with an echo-cancelling client the coupling
// it learns is near 0, so a real barge-in loses nothing.
import type { AudioOut } from '../../media/audio/format.js';

/** Output energy is kept in 10 ms bins (480 samples at 48 kHz). */
const BIN_MS = 10;
const BIN_SAMPLES = 480;
/** How far back an echo may come from. */
const WINDOW_BINS = 40;
/** Agent audio quieter than this (mean square, ≈ −50 dBFS) is not a source of echo worth guarding. */
const OUTPUT_FLOOR = 10_000;
/** Input this much louder (energy) than the predicted echo is the caller: ≈ 4 dB. */
const MARGIN = 2.5;
/**
 * How far behind the agent's playout the caller's audio may be (its frames arriving together: an
 * append of a few hundred ms, a jitter buffer catching up); further behind, the caller's audio had a
 * gap (a client that sends nothing in silence), and it is placed at the playout again.
 */
const MAX_BURST_BINS = 50;
/** How far back a frame recorded before it arrived is placed at most (bins kept for it: 2 s). */
const MAX_AGO_BINS = 200;
/** After audio that passed, the caller's next audio passes too for this long (20 ms frames). */
const HANGOVER_FRAMES = 15;
/** Coupling learned from the last this many echo-only frames (3 s of agent audio). */
const COUPLING_FRAMES = 150;
/**
 * Until this many frames are learned (the first half second the caller's audio comes in while the
 * agent speaks), the echo is taken to be up to 10 dB under the agent's level: a caller speaking over
 * the very start of the first reply needs to be no more than 6 dB quieter than the agent.
 */
const LEARNING_FRAMES = 25;
const COUPLING_PRIOR = 0.1;

/** Energy (mean square) of a piece of audio in the two bands: whole, and highs (first difference). */
interface Energy {
  all: number;
  highs: number;
}

/**
 * Sums of squares over a stream, the first difference continuing across pieces. The highs are taken
 * at the caller's rate (the agent's 48 kHz averaged down by `decimate` first, as the transport brings
 * the caller's audio down), so that both sides' highs are on one scale.
 */
class EnergyMeter {
  all = 0;
  count = 0;
  private highs = 0;
  private highsCount = 0;
  private last = 0;
  private sum = 0;
  private summed = 0;

  constructor(private readonly decimate = 1) {}

  add(x: number): void {
    this.all += x * x;
    this.count++;
    this.sum += x;
    if (++this.summed < this.decimate) return;
    const y = this.sum / this.decimate;
    this.sum = this.summed = 0;
    const d = y - this.last;
    this.last = y;
    this.highs += d * d;
    this.highsCount++;
  }

  /** The mean squares so far, and starts again. */
  take(): Energy {
    const e = { all: this.all / Math.max(1, this.count), highs: this.highs / Math.max(1, this.highsCount) };
    this.all = this.highs = this.count = this.highsCount = 0;
    return e;
  }
}

/** Recent ratios of one band, and the coupling they show. */
class Coupling {
  private ratios: number[] = [];

  learn(ratio: number): void {
    this.ratios.push(ratio);
    if (this.ratios.length > COUPLING_FRAMES) this.ratios.shift();
  }

  /** The 95th percentile of the echo-only ratios (the echo's louder moments); the prior until learned. */
  value(): number {
    if (this.ratios.length < LEARNING_FRAMES) return COUPLING_PRIOR;
    const sorted = [...this.ratios].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.95))]!;
  }
}

export interface EchoGuardStats {
  /** 20 ms input frames silenced as echo. */
  dampedFrames: number;
  /** The coupling learned so far (input energy over the agent's, 0–1+), whole signal and highs. */
  coupling: number;
  couplingHighs: number;
}

export class EchoGuard {
  /** The energy of each 10 ms bin of the agent's audio, from bin `base` on. */
  private bins: Energy[] = [];
  private base = 0;
  /** The bin being filled. */
  private readonly sending: EnergyMeter;
  private readonly hearing = new EnergyMeter();
  private readonly coupling = { all: new Coupling(), highs: new Coupling() };
  private hangover = 0;
  private damped = 0;
  private out: AudioOut | undefined;
  /**
   * The bin the caller heard as it recorded its latest frame: one bin per 10 ms of the caller's
   * audio, bounded by the audio out, which says how much the caller has still to hear (RTP paces
   * it; a WebSocket client's playout is a timeline). Past the last bin written, the caller hears
   * silence (empty bins are added), so the guard lets go once the echo has died.
   */
  private played = 0;

  /** `inputRate`: the sample rate of the caller's frames it is given (the audio clock); `now`: the clock of `capturedAt`. */
  constructor(
    private readonly inputRate: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.sending = new EnergyMeter(Math.max(1, Math.round(48_000 / inputRate)));
  }

  /** The call's audio out, watched: what is written and dropped tells the guard what the caller hears. */
  watch(out: AudioOut): AudioOut {
    this.out = out;
    const guard = this;
    return {
      write(pcm) {
        guard.sent(pcm);
        out.write(pcm);
      },
      clear() {
        const heard = guard.heardNow();
        const dropped = out.clear();
        guard.dropped(heard);
        return dropped;
      },
      get queuedMs() {
        return out.queuedMs;
      },
      ...(out.sent ? { sent: () => out.sent!() } : {}),
      onPlayback: (listener) => out.onPlayback(listener),
      ...(out.clientTruncates ? { clientTruncates: true } : {}),
    };
  }

  /**
   * One frame of the caller's audio (any rate): itself, or silence when the agent's echo explains it.
   * `capturedAt` (performance.now() ms): when its recording ended, where the transport knows it
   * (frames that arrived together); absent, it is placed by the caller's audio clock.
   */
  filter(frame: Int16Array, capturedAt?: number): Int16Array {
    return this.isEcho(frame, capturedAt) ? new Int16Array(frame.length) : frame;
  }

  /** Whether this frame of the caller's audio (the next one, in order) is the agent's echo and no more. */
  isEcho(frame: Int16Array, capturedAt?: number): boolean {
    this.advance((frame.length * 100) / this.inputRate, capturedAt === undefined ? 0 : Math.max(0, this.now() - capturedAt));
    for (let i = 0; i < frame.length; i++) this.hearing.add(frame[i]!);
    const heard = this.hearing.take();
    const reference = this.reference();
    if (reference.all < OUTPUT_FLOOR) {
      if (this.hangover > 0) this.hangover--;
      return false;
    }
    const ratio = { all: heard.all / reference.all, highs: heard.highs / Math.max(1, reference.highs) };
    const louder = (band: 'all' | 'highs') => ratio[band] > MARGIN * this.coupling[band].value();
    if (louder('all') || louder('highs')) {
      this.hangover = HANGOVER_FRAMES;
      return false;
    }
    // Learned only while the agent is still sending: the silence after its last word (its echo's
    // tail dying away) would teach the guard that nothing comes back.
    if (this.latest() >= OUTPUT_FLOOR) {
      this.coupling.all.learn(ratio.all);
      this.coupling.highs.learn(ratio.highs);
    }
    if (this.hangover > 0) {
      this.hangover--;
      return false;
    }
    this.damped++;
    return true;
  }

  stats(): EchoGuardStats {
    return { dampedFrames: this.damped, coupling: this.coupling.all.value(), couplingHighs: this.coupling.highs.value() };
  }

  /** The loudest of the last 100 ms of agent audio heard (0 once it stopped). */
  private latest(): number {
    const end = Math.floor(this.played);
    let peak = 0;
    for (let b = Math.max(this.base, end - 10); b < end; b++) peak = Math.max(peak, this.bins[b - this.base]!.all);
    return peak;
  }

  /** Bins written, whole ones. */
  private get written(): number {
    return this.base + this.bins.length;
  }

  /** The bin heard now, before advance() of the next frame: what was written less what is queued. */
  private heardNow(): number {
    const queued = this.out?.queuedMs ?? 0;
    return queued > 0 ? this.written - Math.round(queued / BIN_MS) : Math.min(this.written, Math.floor(this.played));
  }

  /**
   * The caller's clock moved on by `bins` (10 ms each). Each frame is placed by its own time in the
   * caller's audio, after the one before it, not by when it arrived: frames that arrive together (an
   * append of several, a jitter buffer catching up) were recorded one after the other, each against
   * the agent's audio playing then. The output's queue bounds that place: a frame was recorded no
   * later than what played when its recording ended (as it arrives, or `agoMs` before, as its
   * transport says: frames handled together though they arrived apart keep their places), nor longer
   * before that than a burst lasts (past that, the caller's audio had a gap: it is placed there).
   */
  private advance(bins: number, agoMs: number): void {
    this.played += bins;
    const queued = this.out?.queuedMs ?? 0;
    if (queued > 0) {
      // What played when the frame's recording ended: now, or `agoMs` before (a frame of an append).
      const playingThen = Math.max(this.base, this.written - Math.round(queued / BIN_MS) - Math.min(MAX_AGO_BINS, Math.round(agoMs / BIN_MS)));
      if (this.played > playingThen || this.played < playingThen - MAX_BURST_BINS) this.played = playingThen;
      return;
    }
    if (this.played <= this.written) return;
    // The agent is silent: what is half a bin is as good as whole, and silence follows.
    if (this.sending.count > 0) this.bins.push(this.sending.take());
    while (this.written < Math.floor(this.played)) this.bins.push({ all: 0, highs: 0 });
  }

  /** The loudest 10 ms of agent audio the caller heard in the window before now, in each band. */
  private reference(): Energy {
    const end = Math.floor(this.played);
    const peak = { all: 0, highs: 0 };
    for (let b = Math.max(this.base, end - WINDOW_BINS); b < end; b++) {
      const bin = this.bins[b - this.base]!;
      peak.all = Math.max(peak.all, bin.all);
      peak.highs = Math.max(peak.highs, bin.highs);
    }
    // Bins long heard are no longer needed.
    const keepFrom = end - WINDOW_BINS - MAX_AGO_BINS;
    if (keepFrom - this.base > 4 * WINDOW_BINS) {
      this.bins.splice(0, keepFrom - this.base);
      this.base = keepFrom;
    }
    return peak;
  }

  private sent(pcm: Int16Array): void {
    // Audio written while nothing was queued starts where the caller is now.
    if ((this.out?.queuedMs ?? 0) === 0 && this.written < Math.floor(this.played)) {
      while (this.written < Math.floor(this.played)) this.bins.push({ all: 0, highs: 0 });
    }
    for (let i = 0; i < pcm.length; i++) {
      this.sending.add(pcm[i]!);
      if (this.sending.count === BIN_SAMPLES) this.bins.push(this.sending.take());
    }
  }

  /** The queue was dropped (barge-in, cancel): the bins from `heard` on never reached the caller. */
  private dropped(heard: number): void {
    this.bins.length = Math.max(0, heard - this.base);
    this.played = Math.min(this.played, heard);
    this.sending.take();
  }
}
