// Validation of `session.update` from the data channel with the same schema and wording as HTTP.
import { Type } from '@sinclair/typebox';
import { Ajv } from 'ajv';
import type { ValidationDetailBody } from './validation.js';
import { toPydanticDetail } from './validation.js';
import { CallParams } from './params.js';
import type { SessionParams } from './params.js';

const { voice, model, temperature, return_transcription, instructions, modalities } = CallParams.properties;
const SessionUpdate = Type.Object({ voice, model, temperature, return_transcription, instructions, modalities });
const validate = new Ajv({ allErrors: true, strict: false }).compile(SessionUpdate);

export type SessionUpdateResult = { ok: true; params: SessionParams } | { ok: false; detail: ValidationDetailBody[] };

/** Applies an update to live params; unknown fields are ignored, as in calls' params. */
export function applySessionUpdate(current: SessionParams, data: unknown): SessionUpdateResult {
  if (!validate(data)) return { ok: false, detail: toPydanticDetail(validate.errors ?? [], 'data', data) };
  const update = data as Partial<SessionParams>;
  const next = { ...current };
  for (const key of ['voice', 'model', 'temperature', 'return_transcription', 'instructions', 'modalities'] as const) {
    if (update[key] !== undefined) (next as Record<string, unknown>)[key] = update[key];
  }
  if (update.modalities) next.modalities = [...new Set(update.modalities)];
  return { ok: true, params: next };
}
