// A server-side client of Parley over OpenAI's Realtime WebSocket, with the published `openai`
// package unchanged: it asks one question in text, then (with AUDIO_FILE) one in speech, and prints
// each answer as it streams (its transcript) and how much audio came with it.
// docs/guides/openai-clients.md explains it; test/tls-dev-cert.test.ts runs it against a server with
// a development certificate.
//
//   npx parley tls dev-cert                                   # once: a local CA and a certificate
//   TLS_CERT_FILE=data/tls/cert.pem TLS_KEY_FILE=data/tls/key.pem npm start
//   NODE_EXTRA_CA_CERTS=data/tls/ca.pem PARLEY_API_KEY=sk_parley_ai_… node examples/openai-websocket.mjs
//
// Settings: PARLEY_API_KEY (an API key, or an ek_ client secret), PARLEY_URL (https://127.0.0.1:8080),
// QUESTION ("What time is it?"), AUDIO_FILE (a WAV file, 16-bit mono PCM at 24 kHz, e.g.
// `sox question.wav -r 24000 -c 1 -b 16 question-24k.wav`: asked after the text question).
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';

/** The PCM of a 16-bit mono 24 kHz WAV file (the session's default input format). */
function pcmOfWav(path) {
  const wav = readFileSync(path);
  let at = 12;
  let format;
  while (at + 8 <= wav.length) {
    const id = wav.toString('ascii', at, at + 4);
    const size = wav.readUInt32LE(at + 4);
    if (id === 'fmt ') format = { channels: wav.readUInt16LE(at + 10), rate: wav.readUInt32LE(at + 12), bits: wav.readUInt16LE(at + 22) };
    if (id === 'data') {
      if (format?.channels !== 1 || format.rate !== 24_000 || format.bits !== 16) throw new Error(`${path}: not 16-bit mono 24 kHz PCM`);
      return wav.subarray(at + 8, at + 8 + size);
    }
    at += 8 + size + (size % 2);
  }
  throw new Error(`${path}: no audio data`);
}

const baseURL = `${process.env.PARLEY_URL ?? 'https://127.0.0.1:8080'}/v1`;
const client = new OpenAI({ apiKey: process.env.PARLEY_API_KEY, baseURL });
// OpenAI's library opens only wss: URLs; Node trusts the development CA through NODE_EXTRA_CA_CERTS.
const rt = new OpenAIRealtimeWS({ model: 'gpt-realtime' }, client);
const questions = ['text', ...(process.env.AUDIO_FILE ? ['audio'] : [])];

let audioBytes = 0;
rt.on('session.created', (e) => console.log(`session ${e.session.id} over ${rt.url.protocol}//${rt.url.host}`));
rt.on('conversation.item.input_audio_transcription.completed', (e) => console.log(`heard: ${e.transcript}`));
rt.on('response.output_audio_transcript.delta', (e) => process.stdout.write(e.delta));
// The agent's voice: 16-bit PCM at 24 kHz, base64 in each delta; a real client plays it.
rt.on('response.output_audio.delta', (e) => (audioBytes += Buffer.from(e.delta, 'base64').length));
rt.on('response.done', (e) => {
  console.log(`\nresponse ${e.response.status}, ${(audioBytes / 48_000).toFixed(1)} s of audio`);
  audioBytes = 0;
  questions.shift();
  if (e.response.status !== 'completed') process.exitCode = 1;
  if (questions[0] === 'audio' && e.response.status === 'completed') return askInSpeech(process.env.AUDIO_FILE);
  rt.close();
});
rt.on('error', (e) => {
  console.error('error:', e.message ?? e);
  rt.close();
  process.exitCode = 1;
});

/** Speech: the microphone's PCM as it is captured (here a file's, 100 ms every 100 ms), then a second
 * of silence; the server's voice activity detection ends the turn and answers. */
function askInSpeech(path) {
  const pcm = Buffer.concat([pcmOfWav(path), Buffer.alloc(48_000)]);
  let at = 0;
  const timer = setInterval(() => {
    rt.send({ type: 'input_audio_buffer.append', audio: pcm.subarray(at, at + 4_800).toString('base64') });
    at += 4_800;
    if (at >= pcm.length) clearInterval(timer);
  }, 100);
}

rt.socket.on('open', () => {
  rt.send({
    type: 'conversation.item.create',
    item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: process.env.QUESTION ?? 'What time is it?' }] },
  });
  rt.send({ type: 'response.create' });
});
