// Pluggable speech backends: OpenAI-compatible transcription (STT_URL) and speech (TTS_URL) servers,
// served by a small local HTTP server in the test, used by a real call.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { listen, openCall } from './helpers/rtcClient.ts';
import { mintToken, startServer, type RunningServer } from './helpers/server.ts';
import { startModelBackends, type ModelBackends } from './helpers/modelBackends.ts';
import { attachMicrophone, speak } from './helpers/speech.ts';

let backends: ModelBackends;
let server: RunningServer;

before(async () => {
  backends = await startModelBackends();
  const base = backends.baseUrl;
  server = await startServer({ STT_URL: base, STT_API_KEY: 'stt-key', TTS_URL: base, TTS_API_KEY: 'tts-key', TTS_MODEL: 'speech-model' });
});
after(async () => {
  await server.stop();
  await backends.close();
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

    const stt = backends.requests.find((r) => r.path === '/v1/audio/transcriptions')!;
    assert.equal(stt.auth, 'Bearer stt-key');
    assert.ok(stt.body.includes('RIFF') && stt.body.includes('name="model"') && stt.body.includes('whisper-1'), 'a WAV file and the model');
    const tts = backends.requests.find((r) => r.path === '/v1/audio/speech')!;
    assert.equal(tts.auth, 'Bearer tts-key');
    assert.deepEqual(JSON.parse(tts.body.toString()), { model: 'speech-model', input: 'hello from the transcription service', voice: 'Victoria', response_format: 'pcm' });
    assert.ok(!server.stderr().includes('stt-key') && !server.stderr().includes('tts-key'));
    mic.stop();
    ear.stop();
  } finally {
    client.close();
  }
});
