// Pluggable speech backends: OpenAI-compatible transcription (STT_URL) and speech (TTS_URL) servers,
// served by a small local HTTP server in the test, used by a real call.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { listen, openCall } from './helpers/rtcClient.ts';
import { mintToken, startServer, type RunningServer } from './helpers/server.ts';
import { encodeWav } from '../src/media/audio/wav.ts';
import { attachMicrophone, speak } from './helpers/speech.ts';

const requests: { path: string; auth?: string; body: Buffer }[] = [];
let backend: Server;
let server: RunningServer;

/** Half a second of a 300 Hz tone as a 24 kHz WAV, what a speech service would return. */
function toneWav(): Buffer {
  const tone = new Int16Array(12_000);
  for (let i = 0; i < tone.length; i++) tone[i] = Math.round(8000 * Math.sin((2 * Math.PI * 300 * i) / 24_000));
  return encodeWav([tone], 24_000);
}

before(async () => {
  backend = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    requests.push({ path: req.url ?? '', auth: req.headers.authorization, body: Buffer.concat(chunks) });
    if (req.url === '/v1/audio/transcriptions') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ text: 'hello from the transcription service' }));
    } else if (req.url === '/v1/audio/speech') {
      // As OpenAI answers: `pcm` is raw 24 kHz 16-bit mono, streamed; otherwise a WAV.
      const pcm = JSON.parse(Buffer.concat(chunks).toString()).response_format === 'pcm';
      const wav = toneWav();
      if (!pcm) return res.writeHead(200, { 'content-type': 'audio/wav' }).end(wav);
      res.writeHead(200, { 'content-type': 'audio/pcm' });
      for (let at = 44; at < wav.length; at += 4800) res.write(wav.subarray(at, at + 4800));
      res.end();
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(backend.address() as AddressInfo).port}/v1`;
  server = await startServer({ STT_URL: base, STT_API_KEY: 'stt-key', TTS_URL: base, TTS_API_KEY: 'tts-key', TTS_MODEL: 'speech-model' });
});
after(async () => {
  await server.stop();
  backend.closeAllConnections();
  backend.close();
});

test('the caller’s turn goes to the transcription service and the reply to the speech service', async () => {
  const token = await mintToken(server.baseUrl, server.devKey);
  const client = await openCall(server.baseUrl, token, { params: { model: 'echo', voice: 'Victoria', return_transcription: true } });
  try {
    await client.waitConnected();
    await client.nextEvent('session.created');
    const mic = await attachMicrophone(client);
    const ear = listen(client);
    await sleep(300);
    await mic.say(speak('good morning'));
    const heard = await client.nextEvent('conversation.item.input_audio_transcription.completed', 15_000);
    assert.equal(heard.transcript, 'hello from the transcription service');
    assert.equal((await client.nextEvent('response.output_item.done')).text, 'hello from the transcription service');
    await client.nextEvent('response.audio.done', 15_000);
    assert.ok(ear.peakRms() > 1000, 'the service’s audio reaches the caller');

    const stt = requests.find((r) => r.path === '/v1/audio/transcriptions')!;
    assert.equal(stt.auth, 'Bearer stt-key');
    assert.ok(stt.body.includes('RIFF') && stt.body.includes('name="model"') && stt.body.includes('whisper-1'), 'a WAV file and the model');
    const tts = requests.find((r) => r.path === '/v1/audio/speech')!;
    assert.equal(tts.auth, 'Bearer tts-key');
    assert.deepEqual(JSON.parse(tts.body.toString()), { model: 'speech-model', input: 'hello from the transcription service', voice: 'Victoria', response_format: 'pcm' });
    assert.ok(!server.stderr().includes('stt-key') && !server.stderr().includes('tts-key'));
    mic.stop();
    ear.stop();
  } finally {
    client.close();
  }
});
