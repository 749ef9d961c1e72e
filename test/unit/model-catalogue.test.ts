import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/env.ts';
import { catalogueFromSettings, ModelFileError, parseModelFile } from '../../src/config/models.ts';

const problems = (text: string, env: NodeJS.ProcessEnv = {}) => {
  try {
    parseModelFile(text, 'models.yaml', env);
  } catch (err) {
    assert.ok(err instanceof ModelFileError, String(err));
    return err.problems;
  }
  assert.fail('the file was accepted');
};

test('a valid file: entries, aliases, keys, fallbacks, secrets from the environment; the built-ins stay', () => {
  const c = parseModelFile(
    `
default: gpt-realtime
models:
  - id: gpt-realtime
    kind: realtime
    description: OpenAI's realtime model
    url: wss://api.openai.com/v1/realtime
    api_key_env: OPENAI_API_KEY
    keys: [key_a, key_b]
    fallback: [local]
  - id: local
    kind: cascade
    aliases: [orga-1-beta]
    llm: { url: "http://127.0.0.1:11434/v1", model: qwen2.5, images: true }
    tts: { url: "http://127.0.0.1:8880/v1", model: kokoro, voices: { alloy: af_bella } }
`,
    'models.yaml',
    { OPENAI_API_KEY: 'sk-test' },
  );
  assert.equal(c.default, 'gpt-realtime');
  const up = c.entries.find((e) => e.id === 'gpt-realtime')!;
  assert.equal(up.kind, 'realtime');
  assert.ok(up.kind === 'realtime' && up.apiKey === 'sk-test' && up.dialect === 'ga' && up.audioFormat === 'pcm16' && up.model === 'gpt-realtime');
  assert.deepEqual(up.keys, ['key_a', 'key_b']);
  const local = c.entries.find((e) => e.id === 'local')!;
  assert.ok(local.kind === 'cascade' && local.llm.images && local.tts?.voices.alloy === 'af_bella' && local.stt === undefined);
  assert.deepEqual(local.aliases, ['orga-1-beta'], 'orga-1-beta is the file’s own alias, not added to the default');
  assert.deepEqual(c.entries.map((e) => e.id).slice(2), ['parley-offline', 'echo', 'audio-echo']);
});

test('JSON is read as well', () => {
  const c = parseModelFile(JSON.stringify({ models: [{ id: 'x', kind: 'offline' }] }), 'models.json');
  assert.equal(c.default, 'x');
  assert.ok(c.entries[0]!.aliases.includes('orga-1-beta'), 'the default answers to orga-1-beta');
});

test('each problem names its line', () => {
  const text = ['models:', '  - id: up', '    kind: realtime', '    url: http://not-a-websocket', '    dialect: v2', '  - id: c', '    kind: cascade', '    colour: red', '  - id: bad', '    kind: quantum'].join('\n');
  const found = problems(text);
  assert.ok(found.some((p) => p.startsWith('models.yaml:4: url must be a ws: or wss: URL')), found.join('\n'));
  assert.ok(found.some((p) => p.startsWith('models.yaml:5: dialect must be ga or beta')), found.join('\n'));
  assert.ok(found.some((p) => p.startsWith('models.yaml:8: unknown field "colour"')), found.join('\n'));
  assert.ok(found.some((p) => p.startsWith('models.yaml:7: a cascade model needs llm')), found.join('\n'));
  assert.ok(found.some((p) => p.startsWith('models.yaml:10: kind must be one of')), found.join('\n'));
});

test('references that go nowhere, clashes, a secret not set and YAML syntax are refused', () => {
  assert.match(problems('default: nope\nmodels:\n  - { id: a, kind: offline }\n').join(), /models.yaml:1: default "nope" is not a model of the file/);
  assert.match(problems('models:\n  - { id: a, kind: offline, fallback: [b] }\n').join(), /a's fallback "b" is not a model/);
  assert.match(problems('models:\n  - { id: a, kind: offline, fallback: [a] }\n').join(), /cannot fall back to itself/);
  assert.match(problems('models:\n  - { id: a, kind: offline }\n  - { id: b, kind: offline, aliases: [a] }\n').join(), /"a" names both/);
  assert.match(problems('models:\n  - { id: a, kind: realtime, url: "wss://x/v1/realtime", api_key_env: NOT_SET }\n').join(), /models.yaml:2: api_key_env names NOT_SET, which is not set/);
  assert.match(problems('models:\n  - id: a\n    kind: [offline\n').join(), /^models.yaml:[34]: Flow sequence/);
  assert.match(problems('models: []\n').join(), /"models" must be a list of at least one model/);
});

test('without a file the settings describe the catalogue: offline default, the LLM_BASE_URL cascade, the REALTIME_URL model', () => {
  const base = { LLM_MODEL: 'gpt-4o-mini', LLM_IMAGES: false, REALTIME_MODEL: 'gpt-realtime', REALTIME_DIALECT: 'ga' as const };
  assert.equal(catalogueFromSettings(base).default, 'parley-offline');
  const cascade = catalogueFromSettings({ ...base, LLM_BASE_URL: 'http://127.0.0.1:9/v1' });
  assert.equal(cascade.default, 'parley-cascade');
  assert.ok(cascade.entries.find((e) => e.id === 'parley-cascade')!.aliases.includes('orga-1-beta'));
  const realtime = catalogueFromSettings({ ...base, LLM_BASE_URL: 'http://127.0.0.1:9/v1', REALTIME_URL: 'wss://api.openai.com/v1/realtime', REALTIME_API_KEY: 'sk-x' });
  assert.equal(realtime.default, 'gpt-realtime');
  assert.deepEqual(realtime.entries.find((e) => e.id === 'gpt-realtime')!.fallback, ['parley-cascade']);
});

test('MODELS_FILE problems stop the start as configuration errors; the examples in the repository load', () => {
  assert.throws(() => loadConfig({ MODELS_FILE: '/nonexistent/models.yaml' }), (err: unknown) => err instanceof ConfigError && /MODELS_FILE: cannot read/.test(err.message));
  for (const file of ['examples/models/openai-realtime.yaml', 'examples/models/self-hosted.yaml']) {
    const c = parseModelFile(readFileSync(file, 'utf8'), file, { OPENAI_API_KEY: 'sk-example' });
    assert.ok(c.entries.length > 3, file);
  }
});
