// Cutting a reply's text into clauses to speak, as it arrives in deltas.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ClauseSplitter, SENTENCES, speakableText, splitClauses } from '../../src/agent/tts/clauses.ts';

/** Feeds `text` in deltas of `size` characters and collects the clauses. */
function streamed(text: string, size: number): string[] {
  const s = new ClauseSplitter();
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(...s.push(text.slice(i, i + size)));
  return [...out, ...s.end()];
}

const TEXTS = [
  'Sure, I can help with that. The weather today is sunny, with a high of 25 degrees.',
  'It costs 3.5 dollars, or about 1,000 yen. Dr. Smith will see you at 5 p.m. tomorrow. Bring your ID!',
  'Great! <emotion value="happy. really"/> [laughter] I love it. "Really?" she asked. Yes.',
  'J. R. R. Tolkien wrote it; so did I. Then, after a long and winding walk through the hills that took most of the day, we arrived, tired but happy, at the inn.',
];

test('a short first clause, then sentences; long sentences are also cut at clause marks', () => {
  assert.deepEqual(splitClauses(TEXTS[0]!), ['Sure, ', 'I can help with that. ', 'The weather today is sunny, with a high of 25 degrees.']);
  assert.deepEqual(splitClauses(TEXTS[3]!), [
    'J. R. R. Tolkien wrote it; ',
    'so did I. ',
    'Then, after a long and winding walk through the hills that took most of the day, ',
    'we arrived, tired but happy, at the inn.',
  ]);
});

test('numbers, abbreviations and initials are not cut; quotes stay with their sentence', () => {
  assert.deepEqual(splitClauses(TEXTS[1]!), ['It costs 3.5 dollars, ', 'or about 1,000 yen. ', 'Dr. Smith will see you at 5 p.m. tomorrow. ', 'Bring your ID!']);
  assert.deepEqual(splitClauses('"Really?" she asked. Yes.'), ['"Really?" ', 'she asked. ', 'Yes.']);
});

test('markup is never cut, even with a mark inside, and a clause of markup alone joins the next', () => {
  assert.deepEqual(splitClauses(TEXTS[2]!), ['Great! ', '<emotion value="happy. really"/> [laughter] I love it. ', '"Really?" ', 'she asked. ', 'Yes.']);
  assert.deepEqual(splitClauses('[laughter] '), [], 'nothing to speak');
  assert.equal(speakableText('<emotion value="happy"/> Hello [laughter] there.'), 'Hello there.');
});

test('deltas of any size give the same clauses as the whole text, and the clauses join back into it', () => {
  for (const text of TEXTS) {
    const whole = splitClauses(text);
    for (const size of [1, 2, 3, 5, 7, 13]) assert.deepEqual(streamed(text, size), whole, `deltas of ${size}: ${text}`);
    assert.equal(whole.join(''), text);
  }
});

test('a mark at the end of a delta waits for what follows: "3." then "5" is one number', () => {
  const s = new ClauseSplitter();
  assert.deepEqual(s.push('It is 3.'), []);
  assert.deepEqual(s.push('5 metres, '), ['It is 3.5 metres, ']);
  assert.deepEqual(s.push('more or less.'), []);
  assert.deepEqual(s.end(), ['more or less.']);
});

test('text without marks is cut at a space once long (the first clause sooner)', () => {
  const words = Array.from({ length: 80 }, (_, i) => `word${i}`).join(' ');
  const clauses = splitClauses(words);
  assert.ok(clauses[0]!.length <= 61 && clauses[0]!.length >= 50, `first: ${clauses[0]!.length} chars`);
  assert.ok(clauses.slice(1, -1).every((c) => c.length <= 251 && c.length >= 240), 'later ones at about 250');
  assert.equal(clauses.join(''), words);
  assert.ok(clauses.every((c) => /^word\d+/.test(c) && /\d $|\d$/.test(c)), 'cut between words');
});

test('SENTENCES keeps a clause whole and cuts only sentence ends', () => {
  assert.deepEqual(splitClauses('Well, yes, I think so. And you?', SENTENCES), ['Well, yes, I think so. ', 'And you?']);
});
