// Every catalogue voice has a local voice of its language and gender, and no two sound the same.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { localVoice } from '../../src/agent/tts/voices.ts';
import { DEFAULT_VOICE, VOICES } from '../../src/session/catalog.ts';

const FLITE_GENDER: Record<string, string> = { slt: 'feminine', rms: 'masculine', awb: 'masculine', kal16: 'masculine' };

test('both generations of client voices are in the catalogue; the default is an English voice flite speaks', () => {
  const names = VOICES.map((v) => v.name);
  for (const name of ['alloy', 'ash', 'ballad', 'coral', 'echo', 'fable', 'onyx', 'nova', 'sage', 'shimmer', 'verse', 'marin', 'cedar', 'Sofía', 'Paola']) {
    assert.ok(names.includes(name), name);
  }
  assert.equal(new Set(names).size, names.length, 'no name twice');
  assert.equal(DEFAULT_VOICE, 'Victoria');
  assert.equal(VOICES.find((v) => v.name === DEFAULT_VOICE)?.lang, 'en');
  assert.equal(localVoice(DEFAULT_VOICE).engine, 'flite');
});

test('English voices speak with flite in a voice of their gender; the others with espeak-ng in their language', () => {
  for (const v of VOICES) {
    const local = localVoice(v.name);
    if (v.lang === 'en') {
      assert.equal(local.engine, 'flite', v.name);
      assert.equal(FLITE_GENDER[local.voice], v.gender, `${v.name} (${v.gender}) speaks with ${local.voice}`);
    } else {
      assert.equal(local.engine, 'espeak-ng', v.name);
      assert.ok(local.voice.startsWith(`${v.lang}+${v.gender === 'feminine' ? 'f' : 'm'}`), `${v.name}: ${local.voice}`);
    }
  }
});

test('no two catalogue voices map to the same local voice, pitch and rate', () => {
  const seen = new Map<string, string>();
  for (const v of VOICES) {
    const key = JSON.stringify(localVoice(v.name));
    assert.equal(seen.get(key), undefined, `${v.name} sounds like ${seen.get(key)}`);
    seen.set(key, v.name);
  }
});
