// Call recordings through real calls: a @roamhq/wrtc caller asks a spoken question and the echo
// agent answers; the recording (GET …/recording with the owner's key) passes opusinfo, decodes to
// two channels with the question on the left and the reply on the right when they happened, and
// serves byte ranges. Another key gets 404; a key whose recording is off leaves none.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { shellBlock } from './helpers/markdown.ts';
import { openCall, outboundAudioPackets, type RtcClient } from './helpers/rtcClient.ts';
import { http, mintToken, startServer, type RunningServer } from './helpers/server.ts';
import { attachMicrophone, speak } from './helpers/speech.ts';
import { until } from './helpers/wait.ts';

const RATE = 48_000;

/** Milliseconds (client clock) at which each event type first arrived. */
function eventTimes(client: RtcClient): Map<string, number> {
  const times = new Map<string, number>();
  client.channel.addEventListener('message', (e: { data: string }) => {
    const type = (JSON.parse(e.data) as { type: string }).type;
    if (!times.has(type)) times.set(type, performance.now());
  });
  return times;
}

/** Where `pcm` is louder than a whisper: its first and last such sample, in ms. */
function spokenSpan(pcm: Int16Array): { startMs: number; endMs: number } {
  let first = -1;
  let last = -1;
  for (let i = 0; i < pcm.length; i++) {
    if (Math.abs(pcm[i]!) > 1000) {
      if (first < 0) first = i;
      last = i;
    }
  }
  return { startMs: (first / RATE) * 1000, endMs: (last / RATE) * 1000 };
}

/** A decoded WAV's interleaved 16-bit samples and channel count. */
function readWav(file: string): { channels: number; pcm: Int16Array } {
  const wav = readFileSync(file);
  let at = 12;
  let channels = 0;
  while (at < wav.length) {
    const id = wav.toString('latin1', at, at + 4);
    const size = wav.readUInt32LE(at + 4);
    if (id === 'fmt ') channels = wav.readUInt16LE(at + 10);
    if (id === 'data') return { channels, pcm: new Int16Array(wav.buffer.slice(wav.byteOffset + at + 8, wav.byteOffset + at + 8 + size)) };
    at += 8 + size + (size % 2);
  }
  throw new Error('no data chunk');
}

/** The RMS level of one channel of interleaved stereo between two times (ms). */
function rms(pcm: Int16Array, channel: 0 | 1, fromMs: number, toMs: number): number {
  const from = Math.round((fromMs * RATE) / 1000);
  const to = Math.min(pcm.length / 2, Math.round((toMs * RATE) / 1000));
  assert.ok(to - from >= RATE / 10, `a window of at least 100 ms within the recording (${fromMs}–${toMs} ms)`);
  let sum = 0;
  for (let i = from; i < to; i++) sum += pcm[2 * i + channel]! ** 2;
  return Math.sqrt(sum / (to - from));
}

async function connectedCall(server: RunningServer, apiKey: string): Promise<{ client: RtcClient; times: Map<string, number>; connectedAt: number }> {
  const token = await mintToken(server.baseUrl, apiKey);
  const client = await openCall(server.baseUrl, token, { params: { model: 'echo' } });
  const times = eventTimes(client);
  await client.waitConnected();
  const connectedAt = performance.now();
  await client.nextEvent('session.created');
  return { client, times, connectedAt };
}

async function createKey(server: RunningServer, name: string): Promise<{ id: string; key: string }> {
  const out = (await server.cli('keys', 'create', '--name', name)).stdout;
  return { id: /id:\s+(\S+)/.exec(out)![1]!, key: /key:\s+(\S+)/.exec(out)![1]! };
}

describe('recordings', () => {
  let server: RunningServer;
  let dir: string;
  before(async () => {
    server = await startServer({ RECORDING: 'on' });
    dir = mkdtempSync(join(tmpdir(), 'parley-recording-'));
  });
  after(async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test("a recorded call: opusinfo passes, two channels, the caller's question on the left and the agent's reply on the right when they happened; Range; another key gets 404", async () => {
    const { client, times, connectedAt } = await connectedCall(server, server.devKey);
    const question = speak('what time is it');
    let spokeAt = 0;
    const mic = await attachMicrophone(client);
    try {
      await until('the microphone to send', () => outboundAudioPackets(client), (n) => n >= 25);
      spokeAt = performance.now();
      await mic.say(question);
      await client.nextEvent('response.audio.started', 20_000);
      await client.nextEvent('response.audio.done', 20_000);
    } finally {
      mic.stop();
      client.close();
    }
    const id = client.conversationId;
    const conversation = await until(
      'the recording to be complete',
      () => http(server.baseUrl, `/v1/realtime/conversations/${id}`, { token: server.devKey }),
      (r) => r.body?.recording === 'complete',
    );
    assert.equal(conversation.body.state, 'ended');

    const res = await fetch(`${server.baseUrl}/v1/realtime/conversations/${id}/recording`, { headers: { authorization: `Bearer ${server.devKey}` } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'audio/ogg');
    assert.equal(res.headers.get('accept-ranges'), 'bytes');
    const file = Buffer.from(await res.arrayBuffer());
    const opus = join(dir, 'call.opus');
    writeFileSync(opus, file);
    const info = execFileSync('opusinfo', [opus], { encoding: 'utf8' });
    assert.match(info, /Channels: 2/);
    assert.doesNotMatch(info, /WARNING|ERROR/i);
    execFileSync('opusdec', ['--quiet', '--rate', '48000', opus, join(dir, 'call.wav')]);
    const { channels, pcm } = readWav(join(dir, 'call.wav'));
    assert.equal(channels, 2);

    // The recording's clock starts when the call connects; the windows keep 250 ms clear of each edge
    // for the network, the jitter buffer and the two ends' idea of "connected".
    const spoken = spokenSpan(question);
    const questionFrom = spokeAt - connectedAt + spoken.startMs + 250;
    const questionTo = spokeAt - connectedAt + spoken.endMs - 250;
    const replyFrom = times.get('response.audio.started')! - connectedAt + 250;
    const replyTo = Math.min(replyFrom + 600, times.get('response.audio.done')! - connectedAt - 250);
    const caller = { left: rms(pcm, 0, questionFrom, questionTo), right: rms(pcm, 1, questionFrom, questionTo) };
    const agent = { left: rms(pcm, 0, replyFrom, replyTo), right: rms(pcm, 1, replyFrom, replyTo) };
    assert.ok(caller.left > 500 && caller.right < 100, `the question is on the left only: ${JSON.stringify(caller)}`);
    assert.ok(agent.right > 500 && agent.left < 100, `the reply is on the right only: ${JSON.stringify(agent)}`);

    const ranged = await fetch(`${server.baseUrl}/v1/realtime/conversations/${id}/recording`, { headers: { authorization: `Bearer ${server.devKey}`, range: 'bytes=100-1099' } });
    assert.equal(ranged.status, 206);
    assert.equal(ranged.headers.get('content-range'), `bytes 100-1099/${file.length}`);
    assert.deepEqual(Buffer.from(await ranged.arrayBuffer()), file.subarray(100, 1100));
    const beyond = await http(server.baseUrl, `/v1/realtime/conversations/${id}/recording`, { token: server.devKey, headers: { range: `bytes=${file.length}-` } });
    assert.equal(beyond.status, 416);
    assert.equal(beyond.headers.get('content-range'), `bytes */${file.length}`);

    // docs/operating/recordings.md's commands, as written (this server's address, this call's id).
    const docsDir = join(dir, 'docs');
    mkdirSync(docsDir);
    const script = shellBlock('docs/operating/recordings.md', 'opusdec').replaceAll('http://127.0.0.1:8080', server.baseUrl).replaceAll('conv_XXXXXXXX', id);
    execFileSync('bash', ['-euo', 'pipefail', '-c', script], { cwd: docsDir, env: { ...process.env, PARLEY_API_KEY: server.devKey }, stdio: 'pipe' });
    assert.deepEqual(readFileSync(join(docsDir, 'call.opus')), file);
    assert.deepEqual(readFileSync(join(docsDir, 'head.opus')), file.subarray(0, 65536));
    assert.equal(readWav(join(docsDir, 'call.wav')).channels, 2);

    const other = await createKey(server, 'someone-else');
    const theirs = await http(server.baseUrl, `/v1/realtime/conversations/${id}/recording`, { token: other.key });
    assert.equal(theirs.status, 404);
    assert.equal(theirs.body.error.message, 'No such conversation.');
    // An ephemeral token is no API key, as for the conversation itself.
    const token = await mintToken(server.baseUrl, server.devKey);
    assert.equal((await http(server.baseUrl, `/v1/realtime/conversations/${id}/recording`, { token })).status, 401);
  });

  test("a key whose recording is off (parley keys recording <id> off) leaves no recording: 404", async () => {
    const quiet = await createKey(server, 'not-recorded');
    const set = await server.cli('keys', 'recording', quiet.id, 'off');
    assert.equal(set.code, 0, set.stderr);
    assert.match((await server.cli('keys', 'list')).stdout, new RegExp(`${quiet.id}.*\\toff\\n`));
    const { client } = await connectedCall(server, quiet.key);
    client.close();
    const conversation = await until(
      'the call to end',
      () => http(server.baseUrl, `/v1/realtime/conversations/${client.conversationId}`, { token: quiet.key }),
      (r) => r.body?.state === 'ended',
    );
    assert.equal(conversation.body.recording, null);
    const res = await http(server.baseUrl, `/v1/realtime/conversations/${client.conversationId}/recording`, { token: quiet.key });
    assert.equal(res.status, 404);
    assert.equal(res.body.error.code, 'recording_not_found');
    assert.equal((await server.cli('keys', 'recording', 'key_doesnotexist', 'on')).code, 1);
  });
});
