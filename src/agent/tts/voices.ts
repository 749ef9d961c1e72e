// Every catalogue voice mapped to a local voice of its language and gender. English speaks with
// flite (clearer); the others with espeak-ng. Voices that share an engine voice differ in pitch and
// rate, so no two catalogue names sound the same.
import { VOICES, type VoiceInfo } from '../../session/catalog.js';

export type LocalVoice =
  | { engine: 'flite'; voice: string; pitchHz: number; stretch: number }
  | { engine: 'espeak-ng'; voice: string; pitch: number; wordsPerMinute: number };

const FLITE = { feminine: ['slt'], masculine: ['rms', 'awb', 'kal16'] } as const;
const ESPEAK_LANG: Record<VoiceInfo['lang'], string> = { en: 'en-us', es: 'es', fr: 'fr', pt: 'pt', it: 'it' };
const ESPEAK_VARIANTS = { feminine: ['f1', 'f2', 'f3', 'f4', 'f5'], masculine: ['m1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7'] } as const;

function mapVoice(v: VoiceInfo, index: number): LocalVoice {
  if (v.lang === 'en') {
    const pool = FLITE[v.gender];
    const base = v.gender === 'feminine' ? 170 : 105;
    return { engine: 'flite', voice: pool[index % pool.length]!, pitchHz: base + (index % 4) * 12, stretch: 1 + (index % 3) * 0.05 };
  }
  const variants = ESPEAK_VARIANTS[v.gender];
  return {
    engine: 'espeak-ng',
    voice: `${ESPEAK_LANG[v.lang]}+${variants[index % variants.length]}`,
    pitch: 40 + (index % 4) * 8,
    wordsPerMinute: 160 + (index % 3) * 10,
  };
}

const table = new Map<string, LocalVoice>();
const seen = new Map<string, number>();
for (const v of VOICES) {
  const group = `${v.lang}/${v.gender}`;
  const index = seen.get(group) ?? 0;
  seen.set(group, index + 1);
  table.set(v.name, mapVoice(v, index));
}

export function localVoice(name: string): LocalVoice {
  const v = table.get(name);
  if (!v) throw new Error(`no local voice for "${name}"`);
  return v;
}
