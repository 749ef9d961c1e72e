// A recording past its size cap (RECORDING_MAX_BYTES, set small here): it stops before the cap,
// closed as a valid Ogg Opus file (opusinfo passes); the call's client is told
// (recording.stopped, reason max_size); the call goes on — the echo agent still answers — and
// the conversation says "truncated". Waits for events only: no timing is asserted.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { openCall, outboundAudioPackets } from './helpers/rtcClient.ts';
import { http, mintToken, startServer, type RunningServer } from './helpers/server.ts';
import { attachMicrophone, speak } from './helpers/speech.ts';
import { until } from './helpers/wait.ts';

const CAP = 8192;

let server: RunningServer;
let dir: string;

before(async () => {
  server = await startServer({ RECORDING: 'on', RECORDING_MAX_BYTES: String(CAP) });
  dir = mkdtempSync(join(tmpdir(), 'parley-recording-cap-'));
});

after(async () => {
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('a recording past RECORDING_MAX_BYTES stops as a valid file, the client is told, the call goes on', async () => {
  const client = await openCall(server.baseUrl, await mintToken(server.baseUrl, server.devKey), { params: { model: 'echo' } });
  await client.waitConnected();
  await client.nextEvent('session.created');
  const mic = await attachMicrophone(client);
  try {
    await until('the microphone to send', () => outboundAudioPackets(client), (n) => n >= 25);
    // A spoken question is ≈ 6 KB a second of Opus: past the cap while it is said.
    await mic.say(speak('what time is it'));
    const stopped = await client.nextEvent('recording.stopped', 20_000);
    assert.equal(stopped.reason, 'max_size');
    // The call goes on: the echo agent's reply comes after the recording stopped.
    await client.nextEvent('response.audio.done', 20_000);
    const live = await http(server.baseUrl, `/v1/realtime/conversations/${client.conversationId}`, { token: server.devKey });
    assert.equal(live.body.state, 'active');
  } finally {
    mic.stop();
    client.close();
  }
  const id = client.conversationId;
  // The recording's outcome is written once its file is closed, just after the call's end.
  const conversation = await until(
    'the call to end and its recording to close',
    () => http(server.baseUrl, `/v1/realtime/conversations/${id}`, { token: server.devKey }),
    (r) => r.body?.state === 'ended' && r.body?.recording !== 'recording',
  );
  assert.equal(conversation.body.recording, 'truncated');
  const res = await fetch(`${server.baseUrl}/v1/realtime/conversations/${id}/recording`, { headers: { authorization: `Bearer ${server.devKey}` } });
  assert.equal(res.status, 200);
  const file = Buffer.from(await res.arrayBuffer());
  assert.ok(file.length <= CAP && file.length > CAP / 2, `the file stops short of the cap: ${file.length} bytes`);
  const opus = join(dir, 'capped.opus');
  writeFileSync(opus, file);
  const info = execFileSync('opusinfo', [opus], { encoding: 'utf8' });
  assert.match(info, /Channels: 2/);
  assert.doesNotMatch(info, /WARNING|ERROR/i);
});
