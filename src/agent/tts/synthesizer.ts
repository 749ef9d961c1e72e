// The whole-sentence synthesiser interface the current voice agent uses, until it moves to the
// streaming stages (src/agent/tts/types.ts); the local engines themselves are in local.ts.
import { synthesizeLocally } from './local.js';

export { speakableText } from './clauses.js';

export interface SpeechSynthesizer {
  /** One sentence of speech at 48 kHz. */
  synthesize(text: string, voice: string, signal?: AbortSignal): Promise<Int16Array>;
}

export class LocalSynthesizer implements SpeechSynthesizer {
  synthesize(text: string, voice: string, signal?: AbortSignal): Promise<Int16Array> {
    return synthesizeLocally(text, voice, signal);
  }
}

/** `text` spoken by the catalogue voice `voiceName` with the local engines, 48 kHz mono. */
export function synthesize(voiceName: string, text: string, signal?: AbortSignal): Promise<Int16Array> {
  return synthesizeLocally(text, voiceName, signal);
}
