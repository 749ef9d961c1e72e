// The beta dialect of OpenAI's Realtime protocol, which most phone bridges and older plugins still
// speak (`OpenAI-Beta: realtime=v1`): the one protocol (openai.ts) with its messages translated at
// the edge — event names (response.audio.delta, conversation.item.created…), the flat session object
// (modalities, voice, input_audio_format: "g711_ulaw"…, no `type`), and assistant content types.
import { MAX_MESSAGE_BYTES } from './message.js';
import type { ProtocolFactory } from './types.js';

type Json = Record<string, any>;

/** GA server event names → beta; null: the beta protocol has no such event. */
const BETA_EVENT: Record<string, string | null> = {
  'response.output_audio.delta': 'response.audio.delta',
  'response.output_audio.done': 'response.audio.done',
  'response.output_audio_transcript.delta': 'response.audio_transcript.delta',
  'response.output_audio_transcript.done': 'response.audio_transcript.done',
  'response.output_text.delta': 'response.text.delta',
  'response.output_text.done': 'response.text.done',
  'conversation.item.added': 'conversation.item.created',
  'conversation.item.done': null,
};

const BETA_FORMAT: Record<string, string> = { 'audio/pcm': 'pcm16', 'audio/pcmu': 'g711_ulaw', 'audio/pcma': 'g711_alaw' };
const GA_FORMAT: Record<string, Json> = { pcm16: { type: 'audio/pcm', rate: 24000 }, g711_ulaw: { type: 'audio/pcmu' }, g711_alaw: { type: 'audio/pcma' } };
const BETA_CONTENT: Record<string, string> = { output_audio: 'audio', output_text: 'text' };

const defined = (o: Json): Json => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

function betaItem(item: Json | undefined): Json | undefined {
  if (!item?.content) return item;
  return { ...item, content: item.content.map((c: Json) => ({ ...c, type: BETA_CONTENT[c.type] ?? c.type })) };
}

function betaSession(s: Json): Json {
  const input = s.audio?.input ?? {};
  const output = s.audio?.output ?? {};
  if (s.type === 'transcription') {
    return defined({
      id: s.id,
      object: 'realtime.transcription_session',
      expires_at: s.expires_at,
      modalities: ['text'],
      input_audio_format: BETA_FORMAT[input.format?.type] ?? 'pcm16',
      input_audio_transcription: input.transcription ?? null,
      input_audio_noise_reduction: input.noise_reduction ?? null,
      turn_detection: input.turn_detection ?? null,
      include: s.include ?? null,
    });
  }
  return defined({
    id: s.id,
    object: 'realtime.session',
    model: s.model,
    expires_at: s.expires_at,
    modalities: (s.output_modalities ?? ['audio']).includes('audio') ? ['text', 'audio'] : ['text'],
    instructions: s.instructions,
    voice: output.voice,
    input_audio_format: BETA_FORMAT[input.format?.type] ?? 'pcm16',
    output_audio_format: BETA_FORMAT[output.format?.type] ?? 'pcm16',
    input_audio_transcription: input.transcription ?? null,
    input_audio_noise_reduction: input.noise_reduction ?? null,
    turn_detection: input.turn_detection ?? null,
    tools: s.tools,
    tool_choice: s.tool_choice,
    temperature: s.temperature ?? 0.8,
    max_response_output_tokens: s.max_output_tokens,
  });
}

function betaResponse(r: Json): Json {
  const { output_modalities, audio, ...rest } = r;
  return {
    ...rest,
    output: (r.output ?? []).map(betaItem),
    modalities: (output_modalities ?? ['audio']).includes('audio') ? ['text', 'audio'] : ['text'],
    voice: audio?.output?.voice,
    output_audio_format: BETA_FORMAT[audio?.output?.format?.type] ?? 'pcm16',
  };
}

/** A GA server event in the beta dialect's words, or null when the beta protocol has none. */
export function toBeta(event: Json): Json | null {
  const type = event.type in BETA_EVENT ? BETA_EVENT[event.type] : event.type;
  if (type === null) return null;
  // A transcription session's update is answered in the beta's own words.
  const transcription = event.session?.type === 'transcription';
  const out: Json = { ...event, type: transcription && type === 'session.updated' ? 'transcription_session.updated' : type };
  if (out.session) out.session = betaSession(out.session);
  if (out.response) out.response = betaResponse(out.response);
  if (out.item) out.item = betaItem(out.item);
  return out;
}

/** GA's output modalities from beta's (text and audio together mean a spoken reply). */
const gaModalities = (m: unknown) => (Array.isArray(m) ? (m.includes('audio') ? ['audio'] : ['text']) : undefined);

function gaSession(s: Json, transcription = false): Json {
  const input = defined({
    format: s.input_audio_format !== undefined ? (GA_FORMAT[s.input_audio_format] ?? s.input_audio_format) : undefined,
    transcription: s.input_audio_transcription,
    turn_detection: s.turn_detection,
    noise_reduction: s.input_audio_noise_reduction,
  });
  const output = defined({ format: s.output_audio_format !== undefined ? (GA_FORMAT[s.output_audio_format] ?? s.output_audio_format) : undefined, voice: s.voice });
  const audio = defined({ input: Object.keys(input).length ? input : undefined, output: Object.keys(output).length ? output : undefined });
  return defined({
    type: transcription ? 'transcription' : 'realtime',
    include: s.include,
    model: s.model,
    instructions: s.instructions,
    output_modalities: gaModalities(s.modalities),
    audio: Object.keys(audio).length ? audio : undefined,
    tools: s.tools,
    tool_choice: s.tool_choice,
    temperature: s.temperature,
    max_output_tokens: s.max_response_output_tokens,
  });
}

/** A beta client event in GA's words (what openai.ts reads). */
export function fromBeta(event: Json): Json {
  if (event.type === 'session.update' && event.session && typeof event.session === 'object') return { ...event, session: gaSession(event.session) };
  if (event.type === 'transcription_session.update' && event.session && typeof event.session === 'object') {
    return { ...event, type: 'session.update', session: gaSession(event.session, true) };
  }
  if (event.type === 'response.create' && event.response && typeof event.response === 'object') {
    const { modalities, voice, output_audio_format: _format, temperature: _temperature, ...rest } = event.response;
    return { ...event, response: defined({ ...rest, output_modalities: gaModalities(modalities), audio: voice ? { output: { voice } } : undefined }) };
  }
  return event;
}

/**
 * The server events of Azure OpenAI's realtime preview (api-version 2024-10-01-preview), the only
 * ones its clients take: rt-client ends its session on any other (conversation.created, the input
 * transcription deltas added later, Parley's own parley.* events).
 */
export const AZURE_PREVIEW_EVENTS: ReadonlySet<string> = new Set([
  'error',
  'session.created',
  'session.updated',
  'input_audio_buffer.committed',
  'input_audio_buffer.cleared',
  'input_audio_buffer.speech_started',
  'input_audio_buffer.speech_stopped',
  'conversation.item.created',
  'conversation.item.truncated',
  'conversation.item.deleted',
  'conversation.item.input_audio_transcription.completed',
  'conversation.item.input_audio_transcription.failed',
  'response.created',
  'response.done',
  'response.output_item.added',
  'response.output_item.done',
  'response.content_part.added',
  'response.content_part.done',
  'response.text.delta',
  'response.text.done',
  'response.audio_transcript.delta',
  'response.audio_transcript.done',
  'response.audio.delta',
  'response.audio.done',
  'response.function_call_arguments.delta',
  'response.function_call_arguments.done',
  'rate_limits.updated',
]);

/**
 * The beta dialect over a GA protocol: the same protocol, its messages translated both ways;
 * `only`: the server events sent (a client that refuses any other).
 */
export function betaDialect(ga: ProtocolFactory, only?: ReadonlySet<string>): ProtocolFactory {
  return (control, send) => {
    const inner = ga(control, (message) => {
      const beta = toBeta(message as Json);
      if (beta && (!only || only.has(beta.type))) send(beta);
    });
    return {
      opened: () => inner.opened(),
      receive: (text) => {
        // Only an append may be this large, and it reads the same in both dialects: not parsed twice.
        if (text.length > MAX_MESSAGE_BYTES) return inner.receive(text);
        let message: unknown;
        try {
          message = JSON.parse(text);
        } catch {
          return inner.receive(text); // the protocol answers bad JSON itself
        }
        inner.receive(message && typeof message === 'object' && !Array.isArray(message) ? JSON.stringify(fromBeta(message as Json)) : text);
      },
      deliver: (event) => inner.deliver(event),
      ended: (reason) => inner.ended(reason),
    };
  };
}
