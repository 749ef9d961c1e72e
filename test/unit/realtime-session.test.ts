// The session an upstream realtime model is configured with (agent/realtime/openaiSession.ts): a
// call's session in GA's shape and the beta's, the upstream's audio format and voices, transcription
// always on, the bridge asking for replies itself while the camera is on, and later updates that
// send only what changed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sessionDelta, TRANSCRIPTION_MODEL, upstreamSession, upstreamVoice } from '../../src/agent/realtime/openaiSession.ts';
import { defaultSession, type Session, type TurnDetection } from '../../src/session/session.ts';

const vad: TurnDetection = { type: 'server_vad', threshold: 0.5, prefixPaddingMs: 300, silenceMs: 500, idleTimeoutMs: null, createResponse: true, interruptResponse: true };
/** What an Orga client's call starts with: a voice of Parley's own, audio and video, no transcripts asked for. */
const orga: Session = {
  ...defaultSession({ turnDetection: vad }),
  instructions: 'Be brief.',
  tools: [{ name: 'get_time', description: 'The time', parameters: { type: 'object', properties: {} } }],
  mcpServers: [{ label: 'docs', url: 'https://mcp.example/x', requireApproval: 'never', headers: { authorization: 'Bearer secret' } }],
};
const own = { ownResponses: false };

test('GA: the session object less what a server says, with the upstream format, an upstream voice and transcription on', () => {
  const s = upstreamSession(orga, 'pcm16', 'ga', own);
  assert.deepEqual(Object.keys(s).sort(), ['audio', 'instructions', 'max_output_tokens', 'output_modalities', 'tool_choice', 'tools', 'type']);
  assert.equal(s.type, 'realtime');
  assert.equal(s.instructions, 'Be brief.');
  assert.deepEqual(s.output_modalities, ['audio']);
  assert.deepEqual(s.tools, [{ type: 'function', name: 'get_time', description: 'The time', parameters: { type: 'object', properties: {} } }], 'function tools only: MCP servers and their credentials stay');
  assert.deepEqual(s.audio.input.format, { type: 'audio/pcm', rate: 24000 });
  assert.deepEqual(s.audio.output, { format: { type: 'audio/pcm', rate: 24000 }, voice: 'marin' });
  assert.deepEqual(s.audio.input.transcription, { model: TRANSCRIPTION_MODEL }, 'the record needs the caller’s words even when the client asked for none');
  assert.equal(s.audio.input.turn_detection.type, 'server_vad');
  assert.equal(s.audio.input.turn_detection.silence_duration_ms, 500);
  assert.equal(s.audio.input.turn_detection.create_response, true);
  assert.equal(s.max_output_tokens, 'inf');
  assert.equal('temperature' in s, false, 'GA sessions take no temperature');
  assert.ok(!JSON.stringify(s).includes('secret'));
});

test('the camera on: the bridge asks for the replies (create_response false), interruption stays', () => {
  const s = upstreamSession(orga, 'pcm16', 'ga', { ownResponses: true });
  assert.equal(s.audio.input.turn_detection.create_response, false);
  assert.equal(s.audio.input.turn_detection.interrupt_response, true);
});

test('G.711 upstreams, text-only replies, turn detection off, a transcription session', () => {
  const ulaw = upstreamSession({ ...orga, outputModalities: ['text', 'audio'] }, 'g711_ulaw', 'ga', own);
  assert.deepEqual(ulaw.audio.input.format, { type: 'audio/pcmu' });
  assert.deepEqual(ulaw.audio.output.format, { type: 'audio/pcmu' });
  assert.deepEqual(ulaw.output_modalities, ['audio'], 'GA takes one output modality');
  assert.deepEqual(upstreamSession({ ...orga, outputModalities: ['text'] }, 'g711_alaw', 'ga', own).output_modalities, ['text']);
  assert.equal(upstreamSession({ ...orga, turnDetection: { ...vad, type: 'none' } }, 'pcm16', 'ga', own).audio.input.turn_detection, null);
  const transcription = upstreamSession({ ...orga, kind: 'transcription' }, 'pcm16', 'ga', own);
  assert.equal(transcription.type, 'realtime');
  assert.equal(transcription.audio.input.turn_detection.create_response, false, 'a transcription session answers nothing');
});

test('beta: the flat session, its format names and modalities, a temperature within its bounds', () => {
  const s = upstreamSession(orga, 'g711_ulaw', 'beta', own);
  assert.equal(s.type, undefined);
  assert.equal(s.object, undefined);
  assert.equal(s.model, undefined, 'the model is the URL’s');
  assert.deepEqual(s.modalities, ['text', 'audio']);
  assert.equal(s.voice, 'marin');
  assert.equal(s.input_audio_format, 'g711_ulaw');
  assert.equal(s.output_audio_format, 'g711_ulaw');
  assert.deepEqual(s.input_audio_transcription, { model: TRANSCRIPTION_MODEL });
  assert.equal(s.turn_detection.type, 'server_vad');
  assert.equal(s.temperature, 0.6, "Parley's 0.5 raised to the beta's least");
  assert.equal(s.max_response_output_tokens, 'inf');
  assert.deepEqual(s.tools.map((t: { name: string }) => t.name), ['get_time']);
});

test("voices: OpenAI's own pass, Parley's by gender", () => {
  assert.equal(upstreamVoice('alloy'), 'alloy');
  assert.equal(upstreamVoice('cedar'), 'cedar');
  assert.equal(upstreamVoice('Ethan'), 'cedar');
  assert.equal(upstreamVoice('Sofía'), 'marin');
  assert.equal(upstreamVoice('nova'), 'marin', 'a speech voice the realtime models do not have');
});

test('later updates send what changed: never the voice again unless it changed; GA always names its type', () => {
  const first = upstreamSession(orga, 'pcm16', 'ga', own);
  assert.deepEqual(sessionDelta(undefined, first), first);
  assert.equal(sessionDelta(first, upstreamSession(orga, 'pcm16', 'ga', own)), undefined);
  assert.deepEqual(sessionDelta(first, upstreamSession({ ...orga, instructions: 'Be kind.' }, 'pcm16', 'ga', own)), { type: 'realtime', instructions: 'Be kind.' });
  const slower = sessionDelta(first, upstreamSession({ ...orga, turnDetection: { ...vad, silenceMs: 900 } }, 'pcm16', 'ga', own));
  assert.deepEqual(Object.keys(slower!), ['type', 'audio']);
  assert.deepEqual(Object.keys(slower!.audio), ['input']);
  assert.deepEqual(Object.keys(slower!.audio.input), ['turn_detection']);
  assert.equal(slower!.audio.input.turn_detection.silence_duration_ms, 900);
  assert.equal(slower!.audio.input.turn_detection.type, 'server_vad', 'turn detection goes whole');
  assert.deepEqual(sessionDelta(first, upstreamSession({ ...orga, voice: 'Ethan' }, 'pcm16', 'ga', own)), { type: 'realtime', audio: { output: { voice: 'cedar' } } });
  const beta = upstreamSession(orga, 'pcm16', 'beta', own);
  assert.deepEqual(sessionDelta(beta, upstreamSession({ ...orga, instructions: 'Be kind.' }, 'pcm16', 'beta', own)), { instructions: 'Be kind.' });
});
