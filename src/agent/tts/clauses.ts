// A reply's text, arriving in deltas, cut into clauses to speak one by one: the first at its first
// clause mark or sentence end (so the first audio comes early), the others at sentence ends, or at
// clause marks once long. A mark counts only when whitespace follows it, so "3.5" and "1,000" stay
// whole even when a delta ends between "3." and "5"; "Dr." and initials do not end a sentence;
// markup (`<emotion value="happy"/>`, `[laughter]`) is never cut and not spoken.

/** Markup the existing clients strip from replies (`<emotion value="happy"/>`, `[laughter]`) is not spoken. */
export function speakableText(text: string): string {
  return text
    .replace(/<[^>]*>/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

const SENTENCE_END = new Set(['.', '!', '?', '…']);
const CLAUSE_MARK = new Set([',', ';', ':', '—', '–']);
/** What may close a sentence after its mark: quotes and brackets. */
const CLOSERS = new Set(['"', "'", '”', '’', ')']);
const ABBREVIATIONS = new Set([
  'mr', 'mrs', 'ms', 'dr', 'prof', 'sr', 'jr', 'st', 'mt', 'vs', 'etc', 'e.g', 'i.e', 'a.m', 'p.m', 'u.s', 'u.k', 'no', 'approx', 'inc', 'ltd', 'co', 'fig', 'dept',
]);

export interface ClauseOptions {
  /** The first clause is cut at its first clause mark (else at its sentence's end). */
  firstAtClauseMark: boolean;
  /** Later clauses are also cut at clause marks once this long. */
  clauseMinChars: number;
  /** Without any mark, a clause is cut at a space once this long (the first at `firstMaxChars`). */
  maxChars: number;
  firstMaxChars: number;
}

/** For speaking a reply as it is written: a short first clause, then sentences (long ones at clause marks). */
const CLAUSES: ClauseOptions = { firstAtClauseMark: true, clauseMinChars: 60, maxChars: 250, firstMaxChars: 60 };
/** Whole sentences only (a text already cut into clauses stays as it is). */
export const SENTENCES: ClauseOptions = { firstAtClauseMark: false, clauseMinChars: Infinity, maxChars: 1000, firstMaxChars: 1000 };

export class ClauseSplitter {
  private buffer = '';
  /** Where the next scan resumes: everything before it holds no cut. */
  private scanned = 0;
  private emitted = 0;

  constructor(private readonly options: ClauseOptions = CLAUSES) {}

  /** Adds text; returns the clauses it completed, each with the whitespace that follows it. */
  push(delta: string): string[] {
    this.buffer += delta;
    const out: string[] = [];
    for (let cut = this.nextCut(); cut !== undefined; cut = this.nextCut()) {
      out.push(this.buffer.slice(0, cut));
      this.buffer = this.buffer.slice(cut);
      this.scanned = 0;
      this.emitted++;
    }
    return out;
  }

  /** The text is complete: the rest, as one clause (none when nothing in it is spoken). */
  end(): string[] {
    const rest = this.buffer;
    this.buffer = '';
    this.scanned = 0;
    return speakableText(rest) ? [rest] : [];
  }

  private nextCut(): number | undefined {
    const text = this.buffer;
    const first = this.emitted === 0;
    let i = this.scanned;
    for (; i < text.length; i++) {
      const c = text[i]!;
      if (c === '<' || c === '[') {
        const close = text.indexOf(c === '<' ? '>' : ']', i);
        if (close < 0) break; // wait for the markup to end
        i = close;
        continue;
      }
      const sentence = SENTENCE_END.has(c);
      if (!sentence && !CLAUSE_MARK.has(c)) continue;
      let j = i + 1;
      while (j < text.length && CLOSERS.has(text[j]!)) j++;
      if (j >= text.length) break; // wait: what follows decides
      if (!/\s/.test(text[j]!)) continue;
      if (c === '.' && isAbbreviation(text.slice(0, i))) continue;
      const clause = text.slice(0, j + 1);
      if (!speakableText(clause)) continue;
      if (sentence || (first && this.options.firstAtClauseMark) || clause.length >= this.options.clauseMinChars) return j + 1;
    }
    this.scanned = i;
    const max = first ? this.options.firstMaxChars : this.options.maxChars;
    if (text.length < max) return undefined;
    const lastSpace = text.slice(0, max + 1).search(/\s\S*$/);
    if (lastSpace > 0 && speakableText(text.slice(0, lastSpace))) return lastSpace + 1;
    return undefined;
  }
}

/** The word before a '.' at the end of `before` is an abbreviation or an initial, not a sentence's end. */
function isAbbreviation(before: string): boolean {
  const word = /([A-Za-z][A-Za-z.]*)$/.exec(before)?.[1];
  if (!word) return false;
  if (word.length === 1 && word !== 'I' && /[A-Z]/.test(word)) return true;
  return ABBREVIATIONS.has(word.toLowerCase());
}

/** A whole text cut as the splitter would cut it arriving at once. */
export function splitClauses(text: string, options: ClauseOptions = CLAUSES): string[] {
  const splitter = new ClauseSplitter(options);
  return [...splitter.push(text), ...splitter.end()];
}
