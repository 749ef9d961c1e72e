// The model backends of `bench/loadgen.ts --model remote`, in a process of their own (pinned away
// from the server by the load generator): the OpenAI-compatible stand-ins of test/helpers/modelBackends.ts
// with fixed latencies, speaking real speech (flite, 24 kHz, made once per text). Prints one JSON
// line, {"baseUrl": …}, once listening; answers until killed; on SIGTERM prints the requests it answered.
//   node --import tsx bench/lib/modelBackendsMain.ts --transcription-ms 100 --first-token-ms 150 --first-audio-ms 100
import { parseArgs } from 'node:util';
import { startModelBackends } from '../../test/helpers/modelBackends.ts';
import { speak } from '../../test/helpers/speech.ts';
import { REMOTE_ANSWER_PIECES } from './remoteModels.ts';

const { values } = parseArgs({
  options: {
    'transcription-ms': { type: 'string', default: '100' },
    'first-token-ms': { type: 'string', default: '150' },
    'first-audio-ms': { type: 'string', default: '100' },
    transcript: { type: 'string', default: 'What time is it?' },
  },
});

const voiced = new Map<string, Int16Array>();
const backends = await startModelBackends({
  transcript: values.transcript,
  replyPieces: REMOTE_ANSWER_PIECES,
  pieceGapMs: 10,
  transcriptionMs: Number(values['transcription-ms']),
  firstTokenMs: Number(values['first-token-ms']),
  firstAudioMs: Number(values['first-audio-ms']),
  record: false,
  speech: (input) => {
    let pcm = voiced.get(input);
    if (!pcm) voiced.set(input, (pcm = speak(input, 24_000)));
    return pcm;
  },
});
// Every text the agent will ask for, spoken before the first call, so no flite runs during a step.
for (const piece of REMOTE_ANSWER_PIECES.join('').split(/(?<=[.?!])\s+/)) voiced.set(piece.trim(), speak(piece.trim(), 24_000));
process.stdout.write(`${JSON.stringify({ baseUrl: backends.baseUrl })}\n`);
process.once('SIGTERM', () => {
  process.stdout.write(`${JSON.stringify({ answered: Object.fromEntries(backends.counts) })}\n`);
  void backends.close().then(() => process.exit(0));
});
