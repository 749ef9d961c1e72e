// A bounded look at a large client message before anything parses it. JSON.parse builds every value
// a text holds (15 MiB of `[],` is 5 M arrays), so a message over the ordinary size is first scanned:
// its structure is walked without building anything, string contents skipped at native speed, and
// the walk stops at the first value past `maxValues` or the first nesting past `maxDepth`. What it
// keeps is the top level: each key's value as a position in the text (a string) or its literal
// text, so an append's base64 audio can be taken without parsing the message at all.

/** A top-level value: a string (where its contents are, and whether they hold escapes), a literal, or something nested. */
export type TopValue = { kind: 'string'; start: number; end: number; escaped: boolean } | { kind: 'literal'; text: string } | { kind: 'nested' };

export type Scan =
  | { ok: true; fields: Map<string, TopValue> }
  | {
      ok: false;
      problem: 'invalid_json' | 'not_object' | 'too_many_values' | 'too_deep';
      /** What was read of the top level before the problem (the type, an event_id, for the error). */
      fields: Map<string, TopValue>;
      /** Where the scan stopped: a bomb is refused near its start. */
      at: number;
    };

/** Keys longer than this are no key a client event has: they are skipped, not kept. */
const MAX_KEY_CHARS = 64;

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;

class Stop {
  constructor(readonly problem: 'invalid_json' | 'not_object' | 'too_many_values' | 'too_deep') {}
}

/**
 * Scans `text` as one JSON object, counting every value (containers included) against `maxValues`
 * and nesting (the top-level object is depth 1) against `maxDepth`. Its cost is bounded by
 * `maxValues` plus the length of the strings it skips (native regex runs).
 */
export function scanMessage(text: string, limits: { maxValues: number; maxDepth: number }): Scan {
  const fields = new Map<string, TopValue>();
  let at = 0;
  let values = 0;

  const space = (): void => {
    for (;;) {
      const c = text.charCodeAt(at);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) at++;
      else return;
    }
  };
  const expect = (code: number): void => {
    if (text.charCodeAt(at) !== code) throw new Stop('invalid_json');
    at++;
  };
  const count = (): void => {
    if (++values > limits.maxValues) throw new Stop('too_many_values');
  };
  /** Where the next backslash is, at or after `from` (text.length: none); searched again only once passed. */
  let backslash = -1;
  const backslashFrom = (from: number): number => {
    if (backslash < from) {
      backslash = text.indexOf('\\', from);
      if (backslash === -1) backslash = text.length;
    }
    return backslash;
  };
  /**
   * Skips a string starting at `at` (a quote); returns where its contents are and whether they hold
   * escapes. Its contents are not checked here: a string that is kept is read by JSON.parse when it
   * has escapes, and a message that is parsed is checked whole by it.
   */
  const string = (): { start: number; end: number; escaped: boolean } => {
    expect(0x22);
    const start = at;
    let quote = at;
    for (;;) {
      quote = text.indexOf('"', quote);
      if (quote === -1) throw new Stop('invalid_json');
      // A quote after an odd run of backslashes is escaped.
      let run = quote;
      while (run > start && text.charCodeAt(run - 1) === 0x5c) run--;
      if ((quote - run) % 2 === 0) break;
      quote++;
    }
    at = quote + 1;
    return { start, end: quote, escaped: backslashFrom(start) < quote };
  };
  /** Skips one value at nesting `depth` (its container's depth); returns what the top level keeps of it. */
  const value = (depth: number): TopValue => {
    count();
    const c = text.charCodeAt(at);
    if (c === 0x22) return { kind: 'string', ...string() };
    if (c === 0x7b || c === 0x5b) {
      container(depth + 1);
      return { kind: 'nested' };
    }
    const start = at;
    if (text.startsWith('true', at)) at += 4;
    else if (text.startsWith('false', at)) at += 5;
    else if (text.startsWith('null', at)) at += 4;
    else {
      NUMBER.lastIndex = at;
      if (!NUMBER.test(text)) throw new Stop('invalid_json');
      at = NUMBER.lastIndex;
    }
    return { kind: 'literal', text: text.slice(start, at) };
  };
  /** An object or array at `depth`, starting at its bracket; iterative within, recursive only per level (bounded by maxDepth). */
  const container = (depth: number): void => {
    if (depth > limits.maxDepth) throw new Stop('too_deep');
    const isObject = text.charCodeAt(at) === 0x7b;
    at++;
    space();
    const close = isObject ? 0x7d : 0x5d;
    if (text.charCodeAt(at) === close) {
      at++;
      return;
    }
    for (;;) {
      space();
      let key: string | undefined;
      if (isObject) {
        const k = string();
        if (depth === 1 && !k.escaped && k.end - k.start <= MAX_KEY_CHARS) key = text.slice(k.start, k.end);
        space();
        expect(0x3a);
        space();
      }
      const v = value(depth);
      if (key !== undefined) fields.set(key, v);
      space();
      const c = text.charCodeAt(at);
      if (c === 0x2c) {
        at++;
        continue;
      }
      if (c !== close) throw new Stop('invalid_json');
      at++;
      return;
    }
  };

  try {
    space();
    const c = text.charCodeAt(at);
    if (c !== 0x7b) throw new Stop(c === 0x5b || c === 0x22 || (c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x74 || c === 0x66 || c === 0x6e ? 'not_object' : 'invalid_json');
    values++;
    container(1);
    space();
    if (at !== text.length) throw new Stop('invalid_json');
    return { ok: true, fields };
  } catch (err) {
    if (err instanceof Stop) return { ok: false, problem: err.problem, fields, at };
    throw err;
  }
}

/** A top-level string field's value, or undefined (absent, not a string, or longer than `maxChars`). */
export function stringField(text: string, fields: Map<string, TopValue>, key: string, maxChars = Infinity): string | undefined {
  const v = fields.get(key);
  if (!v || v.kind !== 'string' || v.end - v.start > maxChars * 6) return undefined;
  // Only a string with escapes needs JSON's reading, and a lone string cannot explode.
  const s = v.escaped ? (JSON.parse(text.slice(v.start - 1, v.end + 1)) as string) : text.slice(v.start, v.end);
  return s.length > maxChars ? undefined : s;
}
