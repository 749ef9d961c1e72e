// OpenAI's Realtime (GA) session object: read into Parley's Session (client_secrets, the calls
// request's `session` part, `session.update`) and written out of it (`session.created`/`.updated`,
// the client_secrets answer). Fields Parley has no use for (tracing, prompts) are accepted and left
// alone; the audio formats apply to audio inside events (WebSocket sessions):
// WebRTC carries Opus whatever they say.
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Ajv, type ErrorObject } from 'ajv';
import { VOICES } from '../../session/catalog.js';
import { MAX_INSTRUCTIONS } from '../../session/params.js';
import { ENCODING_OF } from '../../session/openaiWire.js';
import { defaultSession, type Session, type SessionDefaults, type TurnDetection } from '../../session/session.js';
import type { McpServer, ToolChoice } from '../../session/tools.js';

/** The session object is written where both sides of the protocol share it. */
export { openAiSessionObject } from '../../session/openaiWire.js';

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

const ServerVad = Type.Object({
  type: Type.Literal('server_vad'),
  threshold: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  prefix_padding_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 5000 })),
  silence_duration_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000 })),
  idle_timeout_ms: Type.Optional(Nullable(Type.Integer({ minimum: 1000, maximum: 600_000 }))),
  create_response: Type.Optional(Type.Boolean()),
  interrupt_response: Type.Optional(Type.Boolean()),
});

const SemanticVad = Type.Object({
  type: Type.Literal('semantic_vad'),
  eagerness: Type.Optional(Type.Union([Type.Literal('low'), Type.Literal('medium'), Type.Literal('high'), Type.Literal('auto')])),
  create_response: Type.Optional(Type.Boolean()),
  interrupt_response: Type.Optional(Type.Boolean()),
});

/** OpenAI's audio formats: PCM at 24 kHz, or G.711 at 8 kHz. */
const AudioFormat = Type.Union([
  Type.Object({ type: Type.Literal('audio/pcm'), rate: Type.Optional(Type.Literal(24000)) }),
  Type.Object({ type: Type.Literal('audio/pcmu') }),
  Type.Object({ type: Type.Literal('audio/pcma') }),
]);

/** OpenAI's noise_reduction: `near_field` (headsets) or `far_field` (laptops, rooms); null turns it off. */
const NoiseReductionSchema = Type.Object({ type: Type.Union([Type.Literal('near_field'), Type.Literal('far_field')]) });

const FunctionTool = Type.Object({
  type: Type.Literal('function'),
  name: Type.String({ minLength: 1, maxLength: 128 }),
  description: Type.Optional(Type.String({ maxLength: 8192 })),
  parameters: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
});

const ToolNames = Type.Array(Type.String({ maxLength: 128 }), { maxItems: 256 });

/** A remote MCP server whose tools the model may call (OpenAI's `{"type": "mcp"}` tool). */
const McpTool = Type.Object({
  type: Type.Literal('mcp'),
  server_label: Type.String({ minLength: 1, maxLength: 64 }),
  // Or a connector_id (OpenAI's hosted connectors): accepted, and not offered without a server_url.
  server_url: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
  connector_id: Type.Optional(Type.String({ maxLength: 128 })),
  server_description: Type.Optional(Type.String({ maxLength: 4096 })),
  allowed_tools: Type.Optional(Type.Union([Type.Null(), ToolNames, Type.Object({ tool_names: Type.Optional(ToolNames), read_only: Type.Optional(Type.Boolean()) })])),
  require_approval: Type.Optional(
    Type.Union([
      Type.Null(),
      Type.Literal('always'),
      Type.Literal('never'),
      Type.Object({ never: Type.Optional(Type.Object({ tool_names: Type.Optional(ToolNames) })), always: Type.Optional(Type.Object({ tool_names: Type.Optional(ToolNames) })) }),
    ]),
  ),
  headers: Type.Optional(Type.Union([Type.Null(), Type.Record(Type.String({ maxLength: 256 }), Type.String({ maxLength: 4096 }))])),
  authorization: Type.Optional(Type.String({ maxLength: 4096 })),
});

/** A session's MCP tool in Parley's terms (approval by default, as OpenAI's default). */
export function mcpServerOf(t: Static<typeof McpTool> & { server_url: string }): McpServer {
  const allowed = Array.isArray(t.allowed_tools) ? t.allowed_tools : t.allowed_tools?.tool_names;
  const rule = t.require_approval;
  const requireApproval: McpServer['requireApproval'] =
    rule === 'never' ? 'never' : rule && typeof rule === 'object' && rule.never?.tool_names && !rule.always ? { never: rule.never.tool_names } : 'always';
  const headers = { ...(t.headers ?? {}), ...(t.authorization ? { authorization: `Bearer ${t.authorization}` } : {}) };
  return { label: t.server_label, url: t.server_url, ...(allowed ? { allowedTools: allowed } : {}), requireApproval, ...(Object.keys(headers).length ? { headers } : {}) };
}

export const ToolChoiceSchema = Type.Union([
  Type.Literal('auto'),
  Type.Literal('none'),
  Type.Literal('required'),
  Type.Object({ type: Type.Literal('function'), name: Type.String() }),
]);

export const OpenAiSessionSchema = Type.Object({
  // `transcription`: the caller's turns are transcribed, nothing is answered.
  type: Type.Optional(Type.Union([Type.Literal('realtime'), Type.Literal('transcription')])),
  include: Type.Optional(Type.Union([Type.Null(), Type.Array(Type.Literal('item.input_audio_transcription.logprobs'), { maxItems: 4 })])),
  model: Type.Optional(Type.String({ maxLength: 128 })),
  instructions: Type.Optional(Type.String({ maxLength: MAX_INSTRUCTIONS })),
  output_modalities: Type.Optional(Type.Array(Type.Union([Type.Literal('audio'), Type.Literal('text')]), { minItems: 1, maxItems: 2 })),
  audio: Type.Optional(
    Type.Object({
      input: Type.Optional(
        Type.Object({
          format: Type.Optional(AudioFormat),
          transcription: Type.Optional(
            Type.Union([
              Type.Null(),
              Type.Object({ model: Type.Optional(Type.String({ maxLength: 128 })), language: Type.Optional(Type.String({ maxLength: 16 })), prompt: Type.Optional(Type.String({ maxLength: 4096 })) }),
            ]),
          ),
          turn_detection: Type.Optional(Type.Union([Type.Null(), ServerVad, SemanticVad])),
          noise_reduction: Type.Optional(Type.Union([Type.Null(), NoiseReductionSchema])),
        }),
      ),
      output: Type.Optional(
        Type.Object({
          format: Type.Optional(AudioFormat),
          voice: Type.Optional(Type.String({ maxLength: 64 })),
          speed: Type.Optional(Type.Number({ minimum: 0.25, maximum: 4 })),
        }),
      ),
    }),
  ),
  // Other tool kinds are accepted and not offered to the model.
  tools: Type.Optional(Type.Array(Type.Union([FunctionTool, McpTool, Type.Object({ type: Type.String({ pattern: '^(?!function$|mcp$)' }) })]), { maxItems: 128 })),
  tool_choice: Type.Optional(ToolChoiceSchema),
  max_output_tokens: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 4096 }), Type.Literal('inf')])),
  temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
});
export type OpenAiSessionInput = Static<typeof OpenAiSessionSchema>;

const validate = new Ajv({ strict: false, allErrors: false }).compile(OpenAiSessionSchema);

/** An OpenAI-shaped problem: the dotted parameter and a message naming it. */
export interface ParamProblem {
  code: 'invalid_value' | 'invalid_type' | 'missing_required_parameter';
  param: string;
  message: string;
}

/** The first problem Ajv found, worded as OpenAI's API words it, `param` rooted at `root`. */
export function paramProblem(errors: ErrorObject[] | null | undefined, root: string): ParamProblem {
  // A union reports every branch's complaint: the deepest one is about the field the client meant,
  // and among equals, a branch's discriminator (`const`) is the least telling.
  const depth = (x: ErrorObject) => x.instancePath.split('/').length + (x.keyword === 'required' ? 1 : 0);
  const rank = (x: ErrorObject) => depth(x) * 4 - (x.keyword === 'anyOf' ? 3 : x.keyword === 'const' ? 2 : x.keyword === 'type' ? 1 : 0);
  const e = [...(errors ?? [])].sort((a, b) => rank(b) - rank(a))[0];
  const path = [root, ...(e?.instancePath.split('/').filter(Boolean) ?? [])].filter(Boolean);
  if (e?.keyword === 'required') {
    const param = [...path, String((e.params as { missingProperty: string }).missingProperty)].join('.');
    return { code: 'missing_required_parameter', param, message: `Missing required parameter: '${param}'.` };
  }
  const param = path.join('.');
  if (e?.keyword === 'type') return { code: 'invalid_type', param, message: `Invalid type for '${param}': expected ${(e.params as { type: string }).type}.` };
  return { code: 'invalid_value', param, message: `Invalid value for '${param}': ${e?.message ?? 'not allowed'}.` };
}

const VOICE_NAMES = new Set(VOICES.map((v) => v.name));
/** Silence that ends a turn under semantic_vad, by eagerness (undefined: the configured default). */
const SEMANTIC_SILENCE_MS: Record<string, number | undefined> = { low: 1200, high: 250 };

/** What a call through the OpenAI front door starts from, before the app's own session. */
export function openAiDefaultSession(defaults: SessionDefaults): Session {
  return { ...defaultSession(defaults), model: 'gpt-realtime', voice: 'alloy', modalities: ['audio'] };
}

export type OpenAiSessionResult = { ok: true; session: Session } | { ok: false; problem: ParamProblem };

/** OpenAI session fields applied over `current` (fields not given keep their value). */
export function applyOpenAiSession(current: Session, input: unknown, defaults: TurnDetection, root = 'session'): OpenAiSessionResult {
  if (!validate(input)) return { ok: false, problem: paramProblem(validate.errors, root) };
  const s = input as OpenAiSessionInput;
  const next: Session = { ...current };
  if (s.type === 'realtime' && current.kind === 'transcription') {
    // A session becomes a transcription session (its client secret, its first update), never back.
    const param = `${root ? `${root}.` : ''}type`;
    return { ok: false, problem: { code: 'invalid_value', param, message: `Invalid value for '${param}': a transcription session cannot become a realtime session.` } };
  }
  if (s.type === 'transcription') next.kind = 'transcription';
  if (s.include !== undefined) next.include = s.include ?? [];
  if (s.model !== undefined) next.model = s.model;
  if (s.instructions !== undefined) next.instructions = s.instructions;
  if (s.temperature !== undefined) next.temperature = s.temperature;
  if (s.output_modalities) next.outputModalities = [...new Set(s.output_modalities)];
  const voice = s.audio?.output?.voice;
  if (voice !== undefined) {
    if (!VOICE_NAMES.has(voice)) {
      const param = `${root}.audio.output.voice`;
      return { ok: false, problem: { code: 'invalid_value', param, message: `Invalid value for '${param}': '${voice}' is not a voice of this server (GET /v1/realtime/voices).` } };
    }
    next.voice = voice;
  }
  if (s.audio?.input?.format) next.inputAudio = ENCODING_OF[s.audio.input.format.type];
  if (s.audio?.output?.format) next.outputAudio = ENCODING_OF[s.audio.output.format.type];
  const input_ = s.audio?.input;
  if (input_?.transcription !== undefined) next.transcribeInput = input_.transcription !== null;
  if (input_?.turn_detection !== undefined) next.turnDetection = turnDetectionOf(input_.turn_detection, defaults);
  if (input_?.noise_reduction !== undefined) next.noiseReduction = input_.noise_reduction?.type ?? null;
  if (s.tools) {
    const mcp = s.tools.filter((t): t is Static<typeof McpTool> & { server_url: string } => t.type === 'mcp' && 'server_url' in t && !!t.server_url).map(mcpServerOf);
    if (mcp.length || current.mcpServers?.length) next.mcpServers = mcp;
    next.tools = s.tools
      .filter((t): t is Static<typeof FunctionTool> => t.type === 'function' && 'name' in t)
      .map((t) => ({ name: t.name, ...(t.description ? { description: t.description } : {}), ...(t.parameters ? { parameters: t.parameters } : {}) }));
  }
  if (s.tool_choice !== undefined) next.toolChoice = toolChoiceOf(s.tool_choice);
  if (s.max_output_tokens !== undefined) next.maxOutputTokens = s.max_output_tokens === 'inf' ? null : s.max_output_tokens;
  if (next.kind === 'transcription') {
    // Every turn is transcribed, none answered.
    next.transcribeInput = true;
    next.turnDetection = { ...next.turnDetection, createResponse: false, interruptResponse: false, idleTimeoutMs: null };
  }
  return { ok: true, session: next };
}

export function toolChoiceOf(choice: Static<typeof ToolChoiceSchema>): ToolChoice {
  return typeof choice === 'string' ? choice : { name: choice.name };
}

function turnDetectionOf(wire: Static<typeof ServerVad> | Static<typeof SemanticVad> | null, defaults: TurnDetection): TurnDetection {
  if (wire === null) return { ...defaults, type: 'none', createResponse: false, idleTimeoutMs: null };
  const common = { createResponse: wire.create_response ?? true, interruptResponse: wire.interrupt_response ?? true };
  if (wire.type === 'semantic_vad') {
    return { ...defaults, ...common, type: 'semantic_vad', silenceMs: SEMANTIC_SILENCE_MS[wire.eagerness ?? 'auto'] ?? defaults.silenceMs, idleTimeoutMs: null };
  }
  return {
    ...defaults,
    ...common,
    type: 'server_vad',
    threshold: wire.threshold ?? defaults.threshold,
    prefixPaddingMs: wire.prefix_padding_ms ?? defaults.prefixPaddingMs,
    silenceMs: wire.silence_duration_ms ?? defaults.silenceMs,
    idleTimeoutMs: wire.idle_timeout_ms ?? null,
  };
}
