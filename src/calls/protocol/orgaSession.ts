// The Orga clients' view of a session: `params` in, `session.update` data in, the session object
// of `session.created`/`session.updated` out.
import { Type } from '@sinclair/typebox';
import { Ajv, type ValidateFunction } from 'ajv';
import { callParamsSchema, type CallParamsInput } from '../../session/params.js';
import { defaultSession, type Session, type SessionDefaults } from '../../session/session.js';
import { toPydanticDetail, type ValidationDetailBody } from '../../session/validation.js';

/** A calls request's params on top of the defaults (the existing clients' own defaults). */
export function sessionFromParams(input: CallParamsInput, defaults: SessionDefaults): Session {
  const session = defaultSession(defaults);
  return {
    ...session,
    voice: input.voice ?? session.voice,
    model: input.model ?? session.model,
    temperature: input.temperature ?? session.temperature,
    transcribeInput: input.return_transcription ?? false,
    instructions: input.instructions ?? null,
    modalities: input.modalities ? [...new Set(input.modalities)] : session.modalities,
    history: input.history ?? true,
  };
}

export type SessionUpdateResult = { ok: true; session: Session } | { ok: false; detail: ValidationDetailBody[] };
export type SessionUpdater = (current: Session, data: unknown) => SessionUpdateResult;

/** Applies `session.update` data to the live session (unknown fields are ignored, as in params); `models`: the catalogue's names. */
export function sessionUpdater(models: readonly string[]): SessionUpdater {
  const { voice, model, temperature, return_transcription, instructions, modalities } = callParamsSchema(models).properties;
  const validateUpdate = new Ajv({ allErrors: true, strict: false }).compile(Type.Object({ voice, model, temperature, return_transcription, instructions, modalities }));
  return (current, data) => applySessionUpdate(validateUpdate, current, data);
}

function applySessionUpdate(validateUpdate: ValidateFunction, current: Session, data: unknown): SessionUpdateResult {
  if (!validateUpdate(data)) return { ok: false, detail: toPydanticDetail(validateUpdate.errors ?? [], 'data', data) };
  const u = data as Partial<CallParamsInput>;
  return {
    ok: true,
    session: {
      ...current,
      ...(u.voice !== undefined ? { voice: u.voice } : {}),
      ...(u.model !== undefined ? { model: u.model } : {}),
      ...(u.temperature !== undefined ? { temperature: u.temperature } : {}),
      ...(u.return_transcription !== undefined ? { transcribeInput: u.return_transcription } : {}),
      ...(u.instructions !== undefined ? { instructions: u.instructions } : {}),
      ...(u.modalities !== undefined ? { modalities: [...new Set(u.modalities)] } : {}),
    },
  };
}

/** The session object the Orga clients read. `modalities` gates the camera; the microphone always reaches the agent. */
export function orgaSessionObject(session: Session, id: string) {
  return {
    id,
    object: 'realtime.session',
    model: session.model,
    voice: session.voice,
    temperature: session.temperature,
    instructions: session.instructions,
    modalities: session.modalities,
    return_transcription: session.transcribeInput,
    history: session.history,
  };
}
