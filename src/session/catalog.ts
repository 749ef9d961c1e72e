// What a call may ask for: the voices the existing clients offer and the models the server runs.
export type Gender = 'feminine' | 'masculine';

export interface VoiceInfo {
  name: string;
  lang: 'en' | 'es' | 'fr' | 'pt' | 'it';
  gender: Gender;
}

// Every voice the existing clients send (client-compatibility.md): the newer source's 50 (its first,
// Sofía, is its default), then the published release's English names (its default is alloy) and
// OpenAI's others. A client that names its default gets it, as every client does.
const VOICE_TABLE = `Sofía es f, Victoria en f, Ethan en m, Juan es m, Chloe en f, Marta es f, Harold en m, Alex en m,
Julien fr m, Emilio es m, Bruno pt m, Mariana pt f, Carolina pt f, Hannah en f, Valerie en f, Camille fr f, Clara es f,
Max en m, Chloé fr f, Álvaro es m, Giada it f, Lucía es f, Joana pt f, Aurélie fr f, Ignacio es m, Antoine fr m,
Mathieu fr m, André pt m, Natalia es f, Ricardo es m, Adrian en m, Rafael pt m, Gustavo pt m, Marco it m, Alessandro it m,
Matteo it m, Davide it m, Valentina it f, Serena it f, Roberto it m, Emma en f, Bernard fr m, Élise fr f, Nadine fr f,
Laurent fr m, Teresa es f, Helena pt f, Lorenzo it m, Henrique pt m, Paola it f,
alloy en f, ash en m, ballad en m, coral en f, echo en m, fable en m, onyx en m, nova en f, sage en f, shimmer en f,
verse en m, marin en f, cedar en m`;

export const VOICES: readonly VoiceInfo[] = VOICE_TABLE.split(',').map((entry) => {
  const [name, lang, g] = entry.trim().split(/\s+/);
  return { name: name!, lang: lang as VoiceInfo['lang'], gender: g === 'f' ? 'feminine' : 'masculine' };
});

/** Parley's default when a call names no voice: English, like the offline agent, spoken by flite. */
export const DEFAULT_VOICE = 'Victoria';

export interface ModelInfo {
  id: string;
  description: string;
  /** The model this id runs (aliases point at the operator's default). */
  runs: string;
}

export const DEFAULT_MODEL = 'orga-1-beta';

export const MODELS: readonly ModelInfo[] = [
  { id: 'orga-1-beta', description: "The id the existing clients send; runs the operator's default model (LLM_BASE_URL when set, else parley-offline).", runs: 'default' },
  { id: 'parley-offline', description: 'Built-in offline conversational model (rule-based, no weights).', runs: 'parley-offline' },
  { id: 'echo', description: "Repeats the caller's words through the speech pipeline (for tests).", runs: 'echo' },
  { id: 'audio-echo', description: "Plays the caller's audio back after a short delay (media-path tests and latency).", runs: 'audio-echo' },
];

export const DEFAULT_TEMPERATURE = 0.5;
export const MODALITIES = ['audio', 'video'] as const;
export type Modality = (typeof MODALITIES)[number];
