// A server-side client of Parley over OpenAI's Realtime WebSocket, with the published `openai`
// package unchanged: it asks one question in text and prints the agent's answer as it streams (its
// transcript) and how much audio came with it. docs/guides/openai-clients.md explains it;
// test/tls-dev-cert.test.ts runs it against a server with a development certificate.
//
//   npx parley tls dev-cert                                   # once: a local CA and a certificate
//   TLS_CERT_FILE=data/tls/cert.pem TLS_KEY_FILE=data/tls/key.pem npm start
//   NODE_EXTRA_CA_CERTS=data/tls/ca.pem PARLEY_API_KEY=sk_parley_ai_… node examples/openai-websocket.mjs
//
// Settings: PARLEY_API_KEY (an API key, or an ek_ client secret), PARLEY_URL (https://127.0.0.1:8080),
// QUESTION ("What time is it?").
import OpenAI from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';

const baseURL = `${process.env.PARLEY_URL ?? 'https://127.0.0.1:8080'}/v1`;
const client = new OpenAI({ apiKey: process.env.PARLEY_API_KEY, baseURL });
// OpenAI's library opens only wss: URLs; Node trusts the development CA through NODE_EXTRA_CA_CERTS.
const rt = new OpenAIRealtimeWS({ model: 'gpt-realtime' }, client);

let audioBytes = 0;
rt.on('session.created', (e) => console.log(`session ${e.session.id} over ${rt.url.protocol}//${rt.url.host}`));
rt.on('response.output_audio_transcript.delta', (e) => process.stdout.write(e.delta));
// The agent's voice: 16-bit PCM at 24 kHz, base64 in each delta; a real client plays it.
rt.on('response.output_audio.delta', (e) => (audioBytes += Buffer.from(e.delta, 'base64').length));
rt.on('response.done', (e) => {
  console.log(`\nresponse ${e.response.status}, ${(audioBytes / 48_000).toFixed(1)} s of audio`);
  rt.close();
  process.exitCode = e.response.status === 'completed' ? 0 : 1;
});
rt.on('error', (e) => {
  console.error('error:', e.message ?? e);
  rt.close();
  process.exitCode = 1;
});

rt.socket.on('open', () => {
  rt.send({
    type: 'conversation.item.create',
    item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: process.env.QUESTION ?? 'What time is it?' }] },
  });
  rt.send({ type: 'response.create' });
  // Speech instead of text: send the microphone's 16-bit PCM at 24 kHz as it is captured; the server's
  // voice activity detection ends the turn and answers:
  //   mic.on('data', (pcm) => rt.send({ type: 'input_audio_buffer.append', audio: pcm.toString('base64') }));
});
