// Sentences a caller might say, for the voice benchmarks; the commas make flite pause, which is what
// an end-of-turn rule must not take for the end of the turn.
export const SENTENCES = [
  'what time is it',
  'Well, I think that, after all, the weather is quite nice today.',
  'One, two, three, four, five.',
  'Can you tell me, please, how far it is to the station, and when the next train leaves?',
  'I would like to book a table for two people at seven thirty tonight.',
  'Hello, my name is Anna, and I live in a small town by the sea.',
  'First, open the box; then, take out the manual, and read it carefully.',
  'Yes, no, maybe, I do not know.',
];
