import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultSession, type TurnDetection } from '../../src/session/session.ts';
import { applyOpenAiSession, openAiSessionObject } from '../../src/calls/protocol/openaiSession.ts';

const vad: TurnDetection = { type: 'server_vad', threshold: 0.5, prefixPaddingMs: 300, silenceMs: 500, idleTimeoutMs: null, createResponse: true, interruptResponse: true };
const base = defaultSession({ turnDetection: vad });

test("OpenAI's session fields map onto the session, and back out", () => {
  const r = applyOpenAiSession(base, {
    type: 'realtime',
    model: 'gpt-realtime-2025-08-28',
    instructions: 'Be brief.',
    output_modalities: ['text'],
    audio: {
      input: { format: { type: 'audio/pcm', rate: 24000 }, transcription: { model: 'whisper-1' }, turn_detection: { type: 'server_vad', threshold: 0.7, silence_duration_ms: 300, idle_timeout_ms: 6000, create_response: false, interrupt_response: false } },
      output: { voice: 'Emma', speed: 1.1 },
    },
    tools: [{ type: 'function', name: 'lookup', description: 'Looks up', parameters: { type: 'object' } }, { type: 'mcp', server_label: 'x' }],
    tool_choice: { type: 'function', name: 'lookup' },
    max_output_tokens: 200,
    tracing: 'auto',
  }, vad);
  assert.ok(r.ok);
  const s = r.session;
  assert.equal(s.model, 'gpt-realtime-2025-08-28');
  assert.deepEqual(s.outputModalities, ['text']);
  assert.equal(s.voice, 'Emma');
  assert.equal(s.transcribeInput, true);
  assert.deepEqual(s.turnDetection, { ...vad, threshold: 0.7, silenceMs: 300, idleTimeoutMs: 6000, createResponse: false, interruptResponse: false });
  assert.deepEqual(s.tools, [{ name: 'lookup', description: 'Looks up', parameters: { type: 'object' } }], 'function tools only');
  assert.deepEqual(s.toolChoice, { name: 'lookup' });
  assert.equal(s.maxOutputTokens, 200);
  const out = openAiSessionObject(s, 'sess_1');
  assert.equal(out.audio.input.turn_detection?.silence_duration_ms, 300);
  assert.deepEqual(out.tool_choice, { type: 'function', name: 'lookup' });
  assert.equal(out.audio.output.voice, 'Emma');
});

test('turn detection off, and semantic VAD by eagerness', () => {
  const off = applyOpenAiSession(base, { audio: { input: { turn_detection: null } } }, vad);
  assert.ok(off.ok && off.session.turnDetection.type === 'none' && !off.session.turnDetection.createResponse);
  const eager = applyOpenAiSession(base, { audio: { input: { turn_detection: { type: 'semantic_vad', eagerness: 'high' } } } }, vad);
  assert.ok(eager.ok && eager.session.turnDetection.silenceMs < vad.silenceMs);
  const unchanged = applyOpenAiSession(base, { instructions: 'x' }, vad);
  assert.ok(unchanged.ok && unchanged.session.turnDetection === base.turnDetection, 'fields not given keep their value');
});

test('problems name the parameter the way OpenAI does', () => {
  const cases: [unknown, string, string][] = [
    [{ audio: { input: { turn_detection: { type: 'server_vad', threshold: 2 } } } }, 'invalid_value', 'session.audio.input.turn_detection.threshold'],
    [{ audio: { input: { turn_detection: { type: 'server_vad', threshold: 'x' } } } }, 'invalid_type', 'session.audio.input.turn_detection.threshold'],
    [{ audio: { output: { voice: 'Nobody' } } }, 'invalid_value', 'session.audio.output.voice'],
    [{ output_modalities: ['smell'] }, 'invalid_value', 'session.output_modalities.0'],
    [{ max_output_tokens: 0 }, 'invalid_value', 'session.max_output_tokens'],
    [{ tools: [{ type: 'function' }] }, 'missing_required_parameter', 'session.tools.0.name'],
  ];
  for (const [input, code, param] of cases) {
    const r = applyOpenAiSession(base, input, vad);
    assert.ok(!r.ok, JSON.stringify(input));
    assert.deepEqual([r.problem.code, r.problem.param], [code, param], JSON.stringify(input));
    assert.ok(r.problem.message.includes(param));
  }
});

test('noise_reduction: near_field / far_field turn suppression on, null off, a wrong type is refused; the beta dialect too', async () => {
  const on = applyOpenAiSession(base, { audio: { input: { noise_reduction: { type: 'far_field' } } } }, vad);
  assert.ok(on.ok);
  assert.equal(on.session.noiseReduction, 'far_field');
  assert.deepEqual(openAiSessionObject(on.session, 'sess_1').audio.input.noise_reduction, { type: 'far_field' });
  const kept = applyOpenAiSession(on.session, { instructions: 'x' }, vad);
  assert.ok(kept.ok);
  assert.equal(kept.session.noiseReduction, 'far_field', 'a session.update without it keeps it');
  const off = applyOpenAiSession(on.session, { audio: { input: { noise_reduction: null } } }, vad);
  assert.ok(off.ok);
  assert.equal(off.session.noiseReduction, null);
  assert.equal(openAiSessionObject(off.session, 'sess_1').audio.input.noise_reduction, null);
  const bad = applyOpenAiSession(base, { audio: { input: { noise_reduction: { type: 'studio' } } } }, vad);
  assert.ok(!bad.ok);
  assert.match(bad.problem.param, /^session\.audio\.input\.noise_reduction/);
  const { fromBeta, toBeta } = await import('../../src/calls/protocol/openaiBeta.ts');
  const ga = fromBeta({ type: 'session.update', session: { input_audio_noise_reduction: { type: 'near_field' } } });
  assert.deepEqual(ga.session.audio.input.noise_reduction, { type: 'near_field' });
  const beta = toBeta({ type: 'session.updated', session: openAiSessionObject(on.session, 'sess_1') });
  assert.deepEqual(beta?.session.input_audio_noise_reduction, { type: 'far_field' });
});
