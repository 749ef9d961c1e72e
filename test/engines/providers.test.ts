// Speech stages chosen by name in configuration.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/env.ts';
import { createRecognizer, createSpeechEngine, createVadProvider, endpointingDefaults } from '../../src/agent/providers.ts';

test('defaults: Silero (behind the WebRTC VAD gate), PocketSphinx and the local voices; the endpointing defaults from VAD_*', async () => {
  const config = loadConfig({});
  assert.equal(createVadProvider(config).name, 'silero+gate');
  assert.equal(createVadProvider(loadConfig({ VAD_GATE: 'false' })).name, 'silero');
  const recognizer = createRecognizer(config);
  try {
    assert.equal(recognizer.name, 'pocketsphinx');
  } finally {
    await recognizer.close();
  }
  assert.equal(createSpeechEngine(config).name, 'local');
  assert.deepEqual(endpointingDefaults(loadConfig({ VAD_THRESHOLD: '0.6', VAD_PREFIX_PADDING_MS: '200', VAD_SILENCE_MS: '400' })), {
    threshold: 0.6,
    prefixPaddingMs: 200,
    silenceMs: 400,
  });
});

test('a service URL alone chooses the HTTP provider; a provider named explicitly wins', async () => {
  const withUrls = loadConfig({ STT_URL: 'http://127.0.0.1:1/v1', TTS_URL: 'http://127.0.0.1:1/v1', VAD: 'webrtc' });
  assert.equal(createRecognizer(withUrls).name, 'http');
  assert.equal(createSpeechEngine(withUrls).name, 'http');
  assert.equal(createVadProvider(withUrls).name, 'webrtc');
  const explicit = loadConfig({ STT_URL: 'http://127.0.0.1:1/v1', STT_PROVIDER: 'pocketsphinx', TTS_URL: 'http://127.0.0.1:1/v1', TTS_PROVIDER: 'local' });
  const recognizer = createRecognizer(explicit);
  try {
    assert.equal(recognizer.name, 'pocketsphinx');
  } finally {
    await recognizer.close();
  }
  assert.equal(createSpeechEngine(explicit).name, 'local');
});

test('unknown providers, an http provider without its URL and a threshold out of range are configuration errors', () => {
  assert.throws(
    () => loadConfig({ VAD: 'cobra', STT_PROVIDER: 'http', TTS_PROVIDER: 'http', VAD_THRESHOLD: '1.5' }),
    (err: ConfigError) => {
      assert.deepEqual(err.problems, [
        'VAD: must be one of silero, webrtc, got "cobra"',
        'VAD_THRESHOLD: must be between 0.01 and 0.99, got 1.5',
        'STT_PROVIDER: http needs STT_URL',
        'TTS_PROVIDER: http needs TTS_URL',
      ]);
      return true;
    },
  );
  assert.throws(() => loadConfig({ VAD_THRESHOLD: 'high' }), /VAD_THRESHOLD: expected a number, got "high"/);
});
