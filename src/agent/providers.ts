// The speech stages every call of the process shares, built from configuration by provider name
// (VAD, STT_PROVIDER, TTS_PROVIDER). A provider is its own module; adding one is that module, a line
// in the table below and its name in src/config/env.ts (the tables' types keep the two in step).
import type { Config } from '../config/env.js';
import { HttpRecognizer } from './stt/http.js';
import { PocketSphinxRecognizer } from './stt/pocketsphinx.js';
import type { Recognizer } from './stt/types.js';
import { HttpSpeechEngine } from './tts/http.js';
import { createLocalSpeechEngine } from './tts/local.js';
import type { SpeechEngine } from './tts/types.js';
import { gatedVadProvider } from './turn/gate.js';
import { sileroVadProvider } from './turn/silero.js';
import type { EndpointingOptions, VadProvider } from './turn/types.js';
import { webrtcVadProvider, type WebRtcVadMode } from './turn/webrtc.js';

/** The settings the speech stages read. */
export type StageConfig = Pick<
  Config,
  | 'VAD' | 'VAD_MODE' | 'VAD_GATE' | 'VAD_THRESHOLD' | 'VAD_PREFIX_PADDING_MS' | 'VAD_SILENCE_MS'
  | 'STT_PROVIDER' | 'STT_WORKERS' | 'STT_URL' | 'STT_API_KEY' | 'STT_MODEL'
  | 'TTS_PROVIDER' | 'TTS_PROCESSES' | 'TTS_URL' | 'TTS_API_KEY' | 'TTS_MODEL' | 'LLM_TIMEOUT_MS'
>;

type SttName = NonNullable<Config['STT_PROVIDER']>;
type TtsName = NonNullable<Config['TTS_PROVIDER']>;

/** How long the gated VAD keeps judging after the gate last heard sound: over Silero's lag after a voice stops (≈ 80–180 ms). */
const GATE_HANGOVER_MS = 500;

const VADS: Record<Config['VAD'], (c: StageConfig) => VadProvider> = {
  silero: (c) => (c.VAD_GATE ? gatedVadProvider(sileroVadProvider, GATE_HANGOVER_MS) : sileroVadProvider),
  webrtc: (c) => webrtcVadProvider(c.VAD_MODE as WebRtcVadMode),
};

const RECOGNIZERS: Record<SttName, (c: StageConfig) => Recognizer> = {
  pocketsphinx: (c) => new PocketSphinxRecognizer({ workers: c.STT_WORKERS }),
  http: (c) => new HttpRecognizer({ baseUrl: c.STT_URL!, model: c.STT_MODEL, timeoutMs: c.LLM_TIMEOUT_MS, ...(c.STT_API_KEY ? { apiKey: c.STT_API_KEY } : {}) }),
};

const SPEECH_ENGINES: Record<TtsName, (c: StageConfig) => SpeechEngine> = {
  local: (c) => createLocalSpeechEngine(c.TTS_PROCESSES),
  http: (c) => new HttpSpeechEngine({ baseUrl: c.TTS_URL!, model: c.TTS_MODEL, timeoutMs: c.LLM_TIMEOUT_MS, ...(c.TTS_API_KEY ? { apiKey: c.TTS_API_KEY } : {}) }),
};

/** STT_PROVIDER, or when unset: http if STT_URL is set, else the built-in recogniser. */
function recognizerName(c: StageConfig): SttName {
  return c.STT_PROVIDER ?? (c.STT_URL ? 'http' : 'pocketsphinx');
}

/** TTS_PROVIDER, or when unset: http if TTS_URL is set, else the local voices. */
function speechEngineName(c: StageConfig): TtsName {
  return c.TTS_PROVIDER ?? (c.TTS_URL ? 'http' : 'local');
}

export function createVadProvider(c: StageConfig): VadProvider {
  return VADS[c.VAD](c);
}

/** Throws when the engine cannot run here (the built-in recogniser's model is not installed). */
export function createRecognizer(c: StageConfig): Recognizer {
  return RECOGNIZERS[recognizerName(c)](c);
}

export function createSpeechEngine(c: StageConfig): SpeechEngine {
  return SPEECH_ENGINES[speechEngineName(c)](c);
}

/** The operator's turn-detection defaults, which a session's turn_detection may override. */
export function endpointingDefaults(c: StageConfig): EndpointingOptions {
  return { threshold: c.VAD_THRESHOLD, prefixPaddingMs: c.VAD_PREFIX_PADDING_MS, silenceMs: c.VAD_SILENCE_MS };
}
