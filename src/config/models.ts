// The operator's model catalogue: the models a call may ask for, what runs each, which keys may use
// it and what takes over when it fails. Read once at start from MODELS_FILE (YAML or JSON, errors
// naming the line) or, for the simple cases, from the settings (LLM_*, STT_*, TTS_*, REALTIME_*).
import { readFileSync } from 'node:fs';
import { LineCounter, parseDocument, isMap, isSeq, type Node as YamlNode } from 'yaml';

/** The models built into every node: the rule-based agent and two test agents. */
export type BuiltinKind = 'offline' | 'echo' | 'audio-echo';
export type ModelKind = BuiltinKind | 'cascade' | 'realtime';

/** An OpenAI-compatible HTTP service (chat completions, transcriptions or speech). */
export interface HttpService {
  url: string;
  model: string;
  /** Bearer key; never logged, never sent to a client. */
  apiKey?: string;
}

interface EntryBase {
  /** The id clients send (params.model, session.model, ?model=). */
  id: string;
  description: string;
  /** Other names that run this entry (orga-1-beta, gpt-realtime…). */
  aliases: string[];
  /** The API key ids that may use it; '*' for every key. */
  keys: string[] | '*';
  /** The models that take a call over when this one fails, in order. */
  fallback: string[];
}

export interface BuiltinEntry extends EntryBase {
  kind: BuiltinKind;
}

export interface CascadeEntry extends EntryBase {
  kind: 'cascade';
  llm: HttpService & { images: boolean };
  /** Absent: the node's recogniser (STT_* settings). */
  stt?: HttpService;
  /** Absent: the node's speech engine (TTS_* settings). voices maps a catalogue voice to the service's. */
  tts?: HttpService & { voices: Record<string, string> };
}

export type RealtimeDialect = 'ga' | 'beta';
export type RealtimeAudioFormat = 'pcm16' | 'g711_ulaw' | 'g711_alaw';

export interface RealtimeEntry extends EntryBase {
  kind: 'realtime';
  /** The upstream's WebSocket URL (wss://api.openai.com/v1/realtime, or ws://host:port/v1/realtime). */
  url: string;
  apiKey?: string;
  /** The model name sent upstream (?model=). */
  model: string;
  dialect: RealtimeDialect;
  audioFormat: RealtimeAudioFormat;
}

export type ModelEntry = BuiltinEntry | CascadeEntry | RealtimeEntry;

export interface ModelCatalogue {
  /** The entry a call runs when it names no model, or a name the catalogue does not know. */
  default: string;
  entries: ModelEntry[];
}

/** The settings the catalogue is built from when there is no MODELS_FILE. */
export interface ModelSettings {
  MODELS_FILE?: string | undefined;
  LLM_BASE_URL?: string | undefined;
  LLM_API_KEY?: string | undefined;
  LLM_MODEL: string;
  LLM_IMAGES: boolean;
  REALTIME_URL?: string | undefined;
  REALTIME_API_KEY?: string | undefined;
  REALTIME_MODEL: string;
  REALTIME_DIALECT: RealtimeDialect;
  REALTIME_FALLBACK?: string[] | undefined;
}

const BUILTINS: BuiltinEntry[] = [
  { id: 'parley-offline', kind: 'offline', description: 'Built-in offline conversational model (rule-based, no weights).', aliases: [], keys: '*', fallback: [] },
  { id: 'echo', kind: 'echo', description: "Repeats the caller's words through the speech pipeline (for tests).", aliases: [], keys: '*', fallback: [] },
  { id: 'audio-echo', kind: 'audio-echo', description: "Plays the caller's audio back after a short delay (media-path tests and latency).", aliases: [], keys: '*', fallback: [] },
];

/** The name every existing Orga client sends: it always runs the default. */
export const DEFAULT_ALIAS = 'orga-1-beta';

/** The catalogue the settings describe: the built-ins, the LLM_BASE_URL cascade and the REALTIME_URL model. */
export function catalogueFromSettings(s: ModelSettings): ModelCatalogue {
  const entries: ModelEntry[] = BUILTINS.map((e) => ({ ...e }));
  let defaultId = 'parley-offline';
  if (s.LLM_BASE_URL) {
    entries.push({
      id: 'parley-cascade',
      kind: 'cascade',
      description: `${s.LLM_MODEL} at LLM_BASE_URL, with the node's speech recognition and synthesis.`,
      aliases: [],
      keys: '*',
      fallback: ['parley-offline'],
      llm: { url: s.LLM_BASE_URL, model: s.LLM_MODEL, images: s.LLM_IMAGES, ...(s.LLM_API_KEY ? { apiKey: s.LLM_API_KEY } : {}) },
    });
    defaultId = 'parley-cascade';
  }
  if (s.REALTIME_URL) {
    entries.push({
      id: s.REALTIME_MODEL,
      kind: 'realtime',
      description: `${s.REALTIME_MODEL}, a realtime model at REALTIME_URL.`,
      aliases: [],
      keys: '*',
      fallback: s.REALTIME_FALLBACK ?? [defaultId],
      url: s.REALTIME_URL,
      model: s.REALTIME_MODEL,
      dialect: s.REALTIME_DIALECT,
      audioFormat: 'pcm16',
      ...(s.REALTIME_API_KEY ? { apiKey: s.REALTIME_API_KEY } : {}),
    });
    defaultId = s.REALTIME_MODEL;
  }
  return { default: defaultId, entries: withDefaultAlias(entries, defaultId) };
}

function withDefaultAlias(entries: ModelEntry[], defaultId: string): ModelEntry[] {
  if (entries.some((e) => e.id === DEFAULT_ALIAS || e.aliases.includes(DEFAULT_ALIAS))) return entries;
  return entries.map((e) => (e.id === defaultId ? { ...e, aliases: [...e.aliases, DEFAULT_ALIAS] } : e));
}

/** Problems in a models file, each naming its line ("models.yaml:12: ..."). */
export class ModelFileError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('; '));
  }
}

/** Builds the catalogue from the settings, or from MODELS_FILE when set; throws ModelFileError. */
export function loadModelCatalogue(s: ModelSettings, env: NodeJS.ProcessEnv = process.env): ModelCatalogue {
  if (!s.MODELS_FILE) return catalogueFromSettings(s);
  let text: string;
  try {
    text = readFileSync(s.MODELS_FILE, 'utf8');
  } catch (err) {
    throw new ModelFileError([`cannot read ${s.MODELS_FILE}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`]);
  }
  return parseModelFile(text, s.MODELS_FILE, env);
}

const KINDS: ModelKind[] = ['offline', 'echo', 'audio-echo', 'cascade', 'realtime'];

/**
 * Parses and checks a models file (YAML, of which JSON is a subset). `env` resolves `api_key_env`,
 * so that the file itself need hold no secret.
 */
export function parseModelFile(text: string, fileName: string, env: NodeJS.ProcessEnv = process.env): ModelCatalogue {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const problems: string[] = [];
  const at = (node: YamlNode | null | undefined): string => {
    const offset = node?.range?.[0];
    return offset === undefined ? fileName : `${fileName}:${lines.linePos(offset).line}`;
  };
  for (const e of doc.errors) problems.push(`${fileName}:${lines.linePos(e.pos[0]).line}: ${e.message.split('\n')[0]}`);
  if (problems.length) throw new ModelFileError(problems);
  const root = doc.contents;
  if (!isMap(root)) throw new ModelFileError([`${at(root)}: expected a mapping with "models" (and "default")`]);
  const modelsNode = root.get('models', true) as YamlNode | undefined;
  if (!isSeq(modelsNode) || modelsNode.items.length === 0) throw new ModelFileError([`${at(modelsNode ?? root)}: "models" must be a list of at least one model`]);
  for (const pair of root.items) {
    const key = String((pair.key as { value?: unknown })?.value ?? pair.key);
    if (key !== 'models' && key !== 'default') problems.push(`${at(pair.key as YamlNode)}: unknown field "${key}" (expected models, default)`);
  }

  const entries: ModelEntry[] = [];
  for (const item of modelsNode.items as YamlNode[]) {
    const where = at(item);
    if (!isMap(item)) {
      problems.push(`${where}: each model must be a mapping`);
      continue;
    }
    const raw = item.toJSON() as Record<string, unknown>;
    const fieldAt = (name: string) => at((item.get(name, true) as YamlNode | undefined) ?? item);
    const entry = entryOf(raw, fieldAt, env, problems);
    if (entry) entries.push(entry);
  }

  const byName = new Map<string, ModelEntry>();
  for (const e of [...BUILTINS]) byName.set(e.id, e);
  for (const e of entries) {
    for (const name of [e.id, ...e.aliases]) {
      const clash = entries.find((o) => o !== e && (o.id === name || o.aliases.includes(name)));
      if (clash) problems.push(`${fileName}: "${name}" names both ${clash.id} and ${e.id}`);
    }
  }
  // The built-ins stay available unless the file defines an entry of the same id.
  const all: ModelEntry[] = [...entries, ...BUILTINS.filter((b) => !entries.some((e) => e.id === b.id || e.aliases.includes(b.id))).map((b) => ({ ...b }))];
  const names = new Set(all.flatMap((e) => [e.id, ...e.aliases]));
  const defaultNode = root.get('default', true) as YamlNode | undefined;
  const defaultId = root.get('default') === undefined ? entries[0]?.id : String(root.get('default'));
  if (defaultId !== undefined && !names.has(defaultId)) problems.push(`${at(defaultNode)}: default "${defaultId}" is not a model of the file`);
  for (const e of all) {
    for (const f of e.fallback) {
      if (!names.has(f)) problems.push(`${fileName}: ${e.id}'s fallback "${f}" is not a model of the file`);
      else if (f === e.id || e.aliases.includes(f)) problems.push(`${fileName}: ${e.id} cannot fall back to itself`);
    }
  }
  if (problems.length) throw new ModelFileError(problems);
  const resolved = all.find((e) => e.id === defaultId || e.aliases.includes(defaultId!))!;
  return { default: resolved.id, entries: withDefaultAlias(all, resolved.id) };
}

const FIELDS: Record<ModelKind, string[]> = {
  offline: [],
  echo: [],
  'audio-echo': [],
  cascade: ['llm', 'stt', 'tts'],
  realtime: ['url', 'api_key', 'api_key_env', 'model', 'dialect', 'audio_format'],
};
const COMMON = ['id', 'kind', 'description', 'aliases', 'keys', 'fallback'];

function entryOf(raw: Record<string, unknown>, fieldAt: (name: string) => string, env: NodeJS.ProcessEnv, problems: string[]): ModelEntry | undefined {
  const before = problems.length;
  const fail = (field: string, message: string) => void problems.push(`${fieldAt(field)}: ${message}`);
  const id = raw.id;
  if (typeof id !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$/.test(id)) fail('id', 'id must be a name of letters, digits and . _ : - (at most 100)');
  const kind = raw.kind as ModelKind;
  if (!KINDS.includes(kind)) {
    fail('kind', `kind must be one of ${KINDS.join(', ')}`);
    return undefined;
  }
  for (const field of Object.keys(raw)) if (!COMMON.includes(field) && !FIELDS[kind].includes(field)) fail(field, `unknown field "${field}" for a ${kind} model`);
  const strings = (field: string): string[] => {
    const v = raw[field];
    if (v === undefined) return [];
    if (!Array.isArray(v) || v.some((s) => typeof s !== 'string')) {
      fail(field, `${field} must be a list of names`);
      return [];
    }
    return v as string[];
  };
  const keysRaw = raw.keys;
  const keys: string[] | '*' = keysRaw === undefined || keysRaw === '*' ? '*' : strings('keys');
  if (Array.isArray(keys) && keys.includes('*')) fail('keys', 'keys is "*" or a list of key ids, not both');
  const base: EntryBase = {
    id: id as string,
    description: typeof raw.description === 'string' ? raw.description : `${id}`,
    aliases: strings('aliases'),
    keys,
    fallback: strings('fallback'),
  };
  const secret = (obj: Record<string, unknown>, field: string): { apiKey?: string } => {
    if (obj.api_key !== undefined && obj.api_key_env !== undefined) fail(field, 'give api_key or api_key_env, not both');
    if (obj.api_key !== undefined) {
      if (typeof obj.api_key !== 'string') fail(field, 'api_key must be a string');
      else return { apiKey: obj.api_key };
    }
    if (obj.api_key_env !== undefined) {
      const value = typeof obj.api_key_env === 'string' ? env[obj.api_key_env] : undefined;
      if (!value) fail(field, `api_key_env names ${String(obj.api_key_env)}, which is not set`);
      else return { apiKey: value };
    }
    return {};
  };
  const url = (value: unknown, field: string, schemes: string[]): string => {
    if (typeof value !== 'string') {
      fail(field, `${field} must be a URL`);
      return '';
    }
    try {
      const u = new URL(value);
      if (!schemes.includes(u.protocol)) fail(field, `${field} must be a ${schemes.join(' or ')} URL`);
    } catch {
      fail(field, `${field} is not a URL: "${value}"`);
    }
    return value;
  };
  const service = (field: string, defaultModel: string): (HttpService & Record<string, unknown>) | undefined => {
    const v = raw[field];
    if (v === undefined) return undefined;
    if (typeof v !== 'object' || v === null || Array.isArray(v)) {
      fail(field, `${field} must be a mapping with url, model and api_key or api_key_env`);
      return undefined;
    }
    const o = v as Record<string, unknown>;
    const allowed = ['url', 'model', 'api_key', 'api_key_env', ...(field === 'llm' ? ['images'] : []), ...(field === 'tts' ? ['voices'] : [])];
    for (const k of Object.keys(o)) if (!allowed.includes(k)) fail(field, `unknown field "${field}.${k}"`);
    return { url: url(o.url, field, ['http:', 'https:']), model: typeof o.model === 'string' ? o.model : defaultModel, ...secret(o, field), images: o.images, voices: o.voices };
  };

  let entry: ModelEntry;
  if (kind === 'cascade') {
    const llm = service('llm', 'gpt-4o-mini');
    if (!llm) fail('kind', 'a cascade model needs llm (url, model)');
    if (llm && llm.images !== undefined && typeof llm.images !== 'boolean') fail('llm', 'llm.images must be true or false');
    const stt = service('stt', 'whisper-1');
    const tts = service('tts', 'tts-1');
    const voices = tts?.voices;
    if (voices !== undefined && (typeof voices !== 'object' || voices === null || Object.values(voices).some((x) => typeof x !== 'string'))) fail('tts', 'tts.voices maps voice names to names');
    entry = {
      ...base,
      kind,
      llm: { url: llm?.url ?? '', model: llm?.model ?? '', images: llm?.images === true, ...(llm?.apiKey ? { apiKey: llm.apiKey } : {}) },
      ...(stt ? { stt: { url: stt.url, model: stt.model, ...(stt.apiKey ? { apiKey: stt.apiKey } : {}) } } : {}),
      ...(tts ? { tts: { url: tts.url, model: tts.model, voices: (voices as Record<string, string>) ?? {}, ...(tts.apiKey ? { apiKey: tts.apiKey } : {}) } } : {}),
    };
  } else if (kind === 'realtime') {
    const dialect = raw.dialect ?? 'ga';
    if (dialect !== 'ga' && dialect !== 'beta') fail('dialect', 'dialect must be ga or beta');
    const audioFormat = raw.audio_format ?? 'pcm16';
    if (!['pcm16', 'g711_ulaw', 'g711_alaw'].includes(audioFormat as string)) fail('audio_format', 'audio_format must be pcm16, g711_ulaw or g711_alaw');
    if (raw.model !== undefined && typeof raw.model !== 'string') fail('model', 'model must be a string');
    entry = {
      ...base,
      kind,
      url: url(raw.url, 'url', ['ws:', 'wss:']),
      model: (raw.model as string | undefined) ?? (id as string),
      dialect: dialect as RealtimeDialect,
      audioFormat: audioFormat as RealtimeAudioFormat,
      ...secret(raw, 'api_key'),
    };
  } else {
    entry = { ...base, kind };
  }
  return problems.length === before ? entry : undefined;
}

/** The entry `name` runs (an id or an alias); undefined for a name the catalogue does not know. */
export function findModel(catalogue: ModelCatalogue, name: string): ModelEntry | undefined {
  return catalogue.entries.find((e) => e.id === name) ?? catalogue.entries.find((e) => e.aliases.includes(name));
}

/** Whether the key `apiKeyId` may use `entry`. */
export function keyMayUse(entry: ModelEntry, apiKeyId: string): boolean {
  return entry.keys === '*' || entry.keys.includes(apiKeyId);
}

/** Every id and alias of the catalogue (what the protocols' schemas accept as a model). */
export function modelNames(catalogue: ModelCatalogue): string[] {
  return catalogue.entries.flatMap((e) => [e.id, ...e.aliases]);
}
