// A call's session as an upstream OpenAI Realtime model is configured with: the session object Parley
// writes to its own clients (session/openaiWire.ts), less what only a server says (ids, expiry), with
// the upstream's own audio format, a voice the upstream has, its transcription always on (the
// conversation's record needs the caller's words, whether or not the client asked for them), and in
// the beta dialect's shape when the upstream speaks it. Later updates send only what changed: an
// upstream takes no new voice once it has spoken.
import type { RealtimeAudioFormat, RealtimeDialect } from '../../config/models.js';
import type { AudioEncoding } from '../../media/audio/wireAudio.js';
import { VOICES } from '../../session/catalog.js';
import { clientEventToBeta } from '../../session/openaiBeta.js';
import { openAiSessionObject } from '../../session/openaiWire.js';
import type { Session } from '../../session/session.js';
import type { UpstreamSessionOptions } from './types.js';

type Json = Record<string, any>;

/** The voices OpenAI's realtime models speak with. */
export const OPENAI_REALTIME_VOICES: ReadonlySet<string> = new Set(['alloy', 'ash', 'ballad', 'coral', 'echo', 'sage', 'shimmer', 'verse', 'marin', 'cedar']);

/** The transcription model asked for the caller's words (an upstream that is another Parley ignores it). */
export const TRANSCRIPTION_MODEL = 'gpt-4o-mini-transcribe';

/** A catalogue encoding of the upstream's audio format. */
export const ENCODING_OF_FORMAT: Record<RealtimeAudioFormat, AudioEncoding> = { pcm16: 'pcm16', g711_ulaw: 'pcmu', g711_alaw: 'pcma' };

/** A catalogue voice as an upstream voice: OpenAI's own names as they are, the others by gender. */
export function upstreamVoice(voice: string): string {
  if (OPENAI_REALTIME_VOICES.has(voice)) return voice;
  return VOICES.find((v) => v.name === voice)?.gender === 'masculine' ? 'cedar' : 'marin';
}

/** The beta interface's temperature bounds. */
const BETA_TEMPERATURE = { min: 0.6, max: 1.2 };

/**
 * The `session` of the session.update that configures the upstream for `session`, in `dialect`.
 * With `ownResponses`, turns still end on the upstream's detection but the bridge asks for the reply.
 */
export function upstreamSession(session: Session, format: RealtimeAudioFormat, dialect: RealtimeDialect, options: UpstreamSessionOptions): Json {
  const encoding = ENCODING_OF_FORMAT[format];
  const td = session.turnDetection;
  // A transcription session answers nothing: the upstream is a realtime session that never replies.
  const asked: Session = {
    ...session,
    kind: undefined,
    inputAudio: encoding,
    outputAudio: encoding,
    voice: upstreamVoice(session.voice),
    turnDetection: { ...td, createResponse: td.createResponse && !options.ownResponses && session.kind !== 'transcription' },
  };
  const o = openAiSessionObject(asked, '') as Json;
  const input: Json = { ...o.audio.input, transcription: { model: TRANSCRIPTION_MODEL } };
  const ga: Json = {
    type: 'realtime',
    // GA takes one output modality: a spoken reply carries its transcript.
    output_modalities: session.outputModalities.includes('audio') ? ['audio'] : ['text'],
    instructions: o.instructions,
    // MCP servers stay Parley's: their credentials are not passed on.
    tools: (o.tools as Json[]).filter((t) => t.type === 'function'),
    tool_choice: o.tool_choice,
    max_output_tokens: o.max_output_tokens,
    audio: { input, output: { format: o.audio.output.format, voice: o.audio.output.voice } },
  };
  if (dialect === 'ga') return ga;
  const temperature = Math.min(BETA_TEMPERATURE.max, Math.max(BETA_TEMPERATURE.min, session.temperature));
  return clientEventToBeta({ type: 'session.update', session: { ...ga, temperature } }).session as Json;
}

/** Fields under which a change is sent field by field (the rest is sent whole when it changed). */
const NESTED = new Set(['audio', 'input', 'output']);

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * What of `next` differs from `previous` (undefined: nothing). GA's `type` is always sent (the
 * upstream requires it); the audio settings are compared field by field.
 */
export function sessionDelta(previous: Json | undefined, next: Json): Json | undefined {
  if (!previous) return next;
  const diff = (a: Json, b: Json, depth: number): Json | undefined => {
    const out: Json = {};
    for (const [key, value] of Object.entries(b)) {
      if (same(a[key], value)) continue;
      const nested = NESTED.has(key) && depth < 3 && value && typeof value === 'object' && !Array.isArray(value) && a[key] && typeof a[key] === 'object';
      const part = nested ? diff(a[key] as Json, value as Json, depth + 1) : value;
      if (part !== undefined) out[key] = part;
    }
    return Object.keys(out).length ? out : undefined;
  };
  const changed = diff(previous, next, 0);
  if (!changed) return undefined;
  return next.type ? { type: next.type, ...changed } : changed;
}
