// The stages a voice agent is composed of, shared by every call of the process and chosen by name in
// configuration: turn detection, speech recognition, the speaker (text deltas → audio). Reply models
// are chosen per call (by the session's model).
import type { Recognizer } from './stt/types.js';
import type { EndpointingOptions, TurnDetector, TurnListener } from './turn/types.js';
import type { SpokenChunk } from './tts/types.js';
import type { EngineHealth } from './health.js';

export interface VoiceStages {
  /** A turn detector for one call. */
  turnDetector(options: EndpointingOptions, listener: TurnListener): TurnDetector;
  recognizer: Recognizer;
  /** A reply's text deltas spoken by a catalogue voice, clause by clause, in order. */
  speak(text: AsyncIterable<string>, voice: string, signal: AbortSignal): AsyncIterable<SpokenChunk>;
  /** The engines' states, by stage, for /readyz. */
  health(): Record<string, EngineHealth>;
  close(): Promise<void>;
}
