// The beta dialect of OpenAI's Realtime protocol (`OpenAI-Beta: realtime=v1`) as GA's messages
// translated: event names (response.audio.delta, conversation.item.created…), the flat session object
// (modalities, voice, input_audio_format: "g711_ulaw"…, no `type`) and assistant content types. Both
// sides use it: Parley's door speaks it to beta clients (calls/protocol/openaiBeta.ts), and the
// realtime bridge to a beta upstream (agent/realtime), each way.
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


// The other side: Parley as the client of an upstream that speaks the beta dialect.

/** Beta server event names → GA (BETA_EVENT the other way). */
const GA_EVENT: Record<string, string> = Object.fromEntries(
  Object.entries(BETA_EVENT).flatMap(([ga, beta]) => (beta === null ? [] : [[beta, ga]])),
);
const GA_CONTENT: Record<string, string> = Object.fromEntries(Object.entries(BETA_CONTENT).map(([ga, beta]) => [beta, ga]));

function gaItem(item: Json | undefined): Json | undefined {
  if (!item?.content || !Array.isArray(item.content)) return item;
  return { ...item, content: item.content.map((c: Json) => ({ ...c, type: GA_CONTENT[c?.type] ?? c?.type })) };
}

/** A beta server event in GA's words (what a beta upstream says, read as GA). */
export function serverEventFromBeta(event: Json): Json {
  const out: Json = { ...event, type: GA_EVENT[event.type] ?? event.type };
  if (out.item) out.item = gaItem(out.item);
  if (out.response && typeof out.response === 'object') {
    const { modalities, ...rest } = out.response as Json;
    out.response = { ...rest, output: Array.isArray(rest.output) ? rest.output.map(gaItem) : rest.output, output_modalities: gaModalities(modalities) };
  }
  return out;
}

/**
 * A GA client event in the beta dialect's words (what a beta upstream reads): the session flattened
 * (only what a session.update may set), a response's modalities and voice, assistant content types.
 */
export function clientEventToBeta(event: Json): Json {
  if (event.type === 'session.update' && event.session) {
    const { id: _id, object: _object, expires_at: _expires, model: _model, ...session } = betaSession(event.session);
    return { ...event, session };
  }
  if (event.type === 'response.create' && event.response) {
    const { output_modalities, audio, input, ...rest } = event.response as Json;
    return {
      ...event,
      response: defined({
        ...rest,
        modalities: Array.isArray(output_modalities) ? (output_modalities.includes('audio') ? ['text', 'audio'] : ['text']) : undefined,
        voice: audio?.output?.voice,
        input: Array.isArray(input) ? input.map(betaItem) : undefined,
      }),
    };
  }
  if (event.type === 'conversation.item.create') return { ...event, item: betaItem(event.item) };
  return event;
}
