// The Orga clients' session parameters (`params` of a calls request, `data` of their
// `session.update`): the schema, single source for validation, types and OpenAPI.
import { Type, type Static } from '@sinclair/typebox';
import { MODALITIES, VOICES } from './catalog.js';

export const MAX_INSTRUCTIONS = 32 * 1024;

/** A string from a fixed set; one `enum` keyword so a wrong value yields one error naming the choices. */
const StringEnum = <T extends string>(values: readonly T[], description?: string) =>
  Type.Unsafe<T>({ type: 'string', enum: [...values], ...(description ? { description } : {}) });

const nullableString = (opts: { maxLength: number; description: string }) =>
  Type.Unsafe<string | null>({ type: ['string', 'null'], ...opts });

/** The params schema for a catalogue whose ids and aliases are `models` (the operator's, read at start). */
export const callParamsSchema = (models: readonly string[]) => Type.Object(
  {
    voice: Type.Optional(StringEnum(VOICES.map((v) => v.name), 'Voice name; see GET /v1/realtime/voices.')),
    model: Type.Optional(StringEnum(models, 'Model id; see GET /v1/realtime/models.')),
    temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
    return_transcription: Type.Optional(Type.Boolean()),
    instructions: Type.Optional(nullableString({ maxLength: MAX_INSTRUCTIONS, description: 'System/persona instructions.' })),
    modalities: Type.Optional(Type.Array(StringEnum(MODALITIES), { maxItems: 2 })),
    history: Type.Optional(Type.Boolean()),
    conversation_id: Type.Optional(Type.String({ maxLength: 64, description: 'Extension: resume this conversation (needs history).' })),
  },
  { title: 'CallParams', description: 'Session parameters; unknown fields are ignored.' },
);
export type CallParamsInput = Static<ReturnType<typeof callParamsSchema>>;
