// What a call may ask for: the voices the existing clients offer (the models are the operator's: config/models.ts).
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

/** The model a session names until it asks for one: the name the Orga clients send, an alias of the catalogue's default. */
export const DEFAULT_MODEL = 'orga-1-beta';

export const DEFAULT_TEMPERATURE = 0.5;
export const MODALITIES = ['audio', 'video'] as const;
export type Modality = (typeof MODALITIES)[number];
