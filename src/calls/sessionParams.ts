// The effective session parameters of a call: what the client sent, with defaults filled in.
import { DEFAULT_MODEL, DEFAULT_TEMPERATURE, DEFAULT_VOICE, type Modality } from '../agent/catalog.js';
import type { CallParamsInput } from '../http/schemas.js';

export interface SessionParams {
  voice: string;
  model: string;
  temperature: number;
  return_transcription: boolean;
  instructions: string | null;
  modalities: Modality[];
  history: boolean;
}

/** The existing clients' own defaults, so a bare `params: {}` behaves like a default client. */
export function effectiveParams(input: CallParamsInput): SessionParams {
  return {
    voice: input.voice ?? DEFAULT_VOICE,
    model: input.model ?? DEFAULT_MODEL,
    temperature: input.temperature ?? DEFAULT_TEMPERATURE,
    return_transcription: input.return_transcription ?? false,
    instructions: input.instructions ?? null,
    modalities: input.modalities ? [...new Set(input.modalities)] : ['audio', 'video'],
    history: input.history ?? true,
  };
}
