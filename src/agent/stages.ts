// The stages a voice agent is composed of, shared by every call of the process and chosen by name in
// configuration (providers.ts): turn detection, speech recognition, the speaker (text deltas →
// audio). Reply models are chosen per call (by the session's model).
import type { SpanParent } from '../observability/tracing.js';
import type { NoiseReduction } from '../session/session.js';
import type { EngineHealth } from './health.js';
import { preloadRnnoise } from './noise/rnnoise.js';
import { createNoiseSuppressor, type NoiseSuppressor } from './noise/suppressor.js';
import { createRecognizer, createSpeechEngine, createVadProvider, type StageConfig } from './providers.js';
import type { Recognizer } from './stt/types.js';
import { Speaker } from './tts/speaker.js';
import type { SpeechEngine, SpokenChunk } from './tts/types.js';
import { createTurnDetector } from './turn/detector.js';
import type { EndpointingOptions, TurnDetector, TurnListener } from './turn/types.js';

/** A reply's voice: its text pushed in as it is generated, its audio out clause by clause, in order. */
export interface SpeakerStream extends AsyncIterable<SpokenChunk> {
  push(delta: string): void;
  end(): void;
}

export interface VoiceStages {
  /** A turn detector for one call. */
  turnDetector(options: EndpointingOptions, listener: TurnListener): TurnDetector;
  /** A noise suppressor for one call's 16 kHz input (throws when its engine cannot run here). */
  noiseSuppressor(type: NoiseReduction): NoiseSuppressor;
  recognizer: Recognizer;
  /** A speaker for one reply, in a catalogue voice, stopped by the signal; `trace`: where its requests' spans go. */
  speaker(voice: string, signal: AbortSignal, trace?: SpanParent): SpeakerStream;
  /** The engines' states, by stage, for /readyz. */
  health(): Record<string, EngineHealth>;
  close(): Promise<void>;
}

/** The stages the configuration names. Throws when one cannot run here (no recogniser model). */
export function createVoiceStages(config: StageConfig): VoiceStages {
  const vad = createVadProvider(config);
  const recognizer = createRecognizer(config);
  const engine = createSpeechEngine(config);
  // Loading the VAD's model holds the event loop for a few hundred ms: at start, not during a call
  // (a failure is reported to the first call that needs it).
  vad.create().then((v) => v.close(), () => {});
  // The noise suppressor's module too (a few ms; sessions may ask for it whatever the default): a
  // failure is reported to the first call that asks for it.
  try {
    preloadRnnoise();
  } catch {}
  return {
    turnDetector(options, listener) {
      // The VAD loads asynchronously; the caller's first frames before it is ready are not judged.
      let detector: TurnDetector | undefined;
      let closed = false;
      let pending: Partial<EndpointingOptions> = {};
      vad.create().then(
        (v) => {
          if (closed) return v.close();
          detector = createTurnDetector(v, { ...options, ...pending }, listener);
        },
        (err: Error) => listener.error(err),
      );
      return {
        push: (pcm) => detector?.push(pcm),
        configure: (o) => (detector ? detector.configure(o) : void (pending = { ...pending, ...o })),
        reset: () => detector?.reset(),
        close: () => {
          closed = true;
          detector?.close();
        },
      };
    },
    noiseSuppressor: createNoiseSuppressor,
    recognizer,
    speaker: (voice, signal, trace) => new Speaker(engine, { voice, signal, ...(trace ? { trace } : {}) }),
    health: () => ({ stt: recognizer.health(), tts: engine.health() }),
    close: async () => {
      await recognizer.close();
      await engine.close?.();
    },
  };
}

/**
 * The same turn detection and noise suppression with another recogniser or speech engine (a cascade
 * model of the catalogue with its own STT or TTS service); closing it closes only those engines.
 */
export function withEngines(stages: VoiceStages, engines: { recognizer?: Recognizer | undefined; speech?: SpeechEngine | undefined }): VoiceStages {
  const { recognizer, speech } = engines;
  return {
    ...stages,
    ...(recognizer ? { recognizer } : {}),
    ...(speech ? { speaker: (voice: string, signal: AbortSignal) => new Speaker(speech, { voice, signal }) } : {}),
    health: () => ({ ...stages.health(), ...(recognizer ? { stt: recognizer.health() } : {}), ...(speech ? { tts: speech.health() } : {}) }),
    close: async () => {
      await recognizer?.close();
      await speech?.close?.();
    },
  };
}
