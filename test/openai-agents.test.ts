// OpenAI's Agents SDK (@openai/agents-realtime, published, unchanged) in headless Chromium against
// Parley: a RealtimeSession over OpenAIRealtimeWebRTC whose baseUrl points at the server under test,
// its client secret minted by an app backend with the `openai` library, a fake microphone speaking.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { launchBrowser, type LaunchedBrowser } from './helpers/browser.ts';
import { startOpenAiApp } from './helpers/openaiApp.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { speechWav } from './helpers/speech.ts';
import { until } from './helpers/wait.ts';

const STORY = 'Once upon a time there was a lighthouse keeper who counted the waves every night. '.repeat(6).trim();

interface AppState {
  events: any[];
  history: any[];
  toolCalls: number;
  connectMs: number;
  peakLevel: number;
}

const state = (page: Page) => page.evaluate('JSON.parse(JSON.stringify(window.app))') as Promise<AppState>;
const transcriptOf = (item: any) => item?.content?.map((c: any) => c.transcript ?? c.text ?? '').join(' ') ?? '';

/** A browser whose fake microphone speaks `parts`, on the app's page, with the session started. */
/**
 * `rawMicrophone`: the app hands the transport a microphone without echo cancellation (its
 * `mediaStream` option), as an app for headphones would. Headless Chromium's echo canceller, fed the
 * agent's audio as its reference, suppresses the fake microphone almost entirely while the agent
 * speaks (measured: the caller's "stop please" reached the server at −40 dB), so a barge-in test with
 * the default microphone would test Chromium's canceller, not Parley.
 */
async function session(parley: RunningServer, parts: (string | { silenceMs: number })[], withTool: boolean, rawMicrophone = false) {
  const dir = mkdtempSync(join(tmpdir(), 'parley-openai-app-'));
  const app = await startOpenAiApp(parley);
  const browser: LaunchedBrowser = await launchBrowser({ fakeMicrophoneWav: speechWav(join(dir, 'mic.wav'), parts) });
  const page = await (await browser.browser.newContext()).newPage();
  const warnings: string[] = [];
  page.on('console', (m) => (m.type() === 'warning' || m.type() === 'error') && warnings.push(m.text()));
  await page.goto(app.url);
  await page.waitForFunction('window.app !== undefined');
  await page.evaluate(`window.app.start(${JSON.stringify({ parley: parley.baseUrl, withTool, rawMicrophone })})`);
  return {
    page,
    warnings,
    async close() {
      await page.evaluate('window.app.close()').catch(() => {});
      await browser.close();
      await app.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

describe('OpenAI Agents SDK in Chromium, offline pipeline', () => {
  let parley: RunningServer;
  before(async () => {
    parley = await startServer();
  });
  after(async () => {
    await parley.stop();
  });

  test('connect() resolves on session.updated; the spoken question and the answer are in the history; response.done; agent audio is audible', async () => {
    const s = await session(parley, [{ silenceMs: 2500 }, 'what time is it', { silenceMs: 8000 }], false);
    try {
      // The SDK waits up to 5 s for session.updated before connect() resolves, and warns when it gives up.
      assert.ok((await state(s.page)).events.some((e) => e.type === 'session.updated'));
      assert.deepEqual(s.warnings.filter((w) => /session\.updated/.test(w)), [], 'connect() resolved on session.updated, not on its timeout');
      // What PocketSphinx makes of Chromium's fake microphone varies with the machine's load (under two
      // busy loops, 1 run in 3 heard "but china is it"), so the history is checked against what the
      // server said it heard and answered, not against the words spoken.
      const done = await until(
        'the user turn and the reply in the history',
        () => state(s.page),
        (st) =>
          st.history.some((i) => i.role === 'user' && transcriptOf(i).trim() !== '') &&
          st.history.some((i) => i.role === 'assistant' && transcriptOf(i).trim() !== '') &&
          st.events.some((e) => e.type === 'response.output_audio_transcript.done'),
        30_000,
      );
      const user = done.history.find((i) => i.role === 'user');
      assert.equal(user.content[0].type, 'input_audio');
      const transcribed = done.events.find((e) => e.type === 'conversation.item.input_audio_transcription.completed');
      assert.equal(transcriptOf(user).trim(), transcribed.transcript.trim(), "the history's user turn is the server's transcript");
      const answered = done.events.find((e) => e.type === 'response.output_audio_transcript.done');
      const assistant = done.history.find((i) => i.role === 'assistant');
      assert.equal(transcriptOf(assistant).trim(), answered.transcript.trim());
      const types = done.events.map((e) => e.type);
      for (const t of ['session.created', 'input_audio_buffer.speech_started', 'input_audio_buffer.committed', 'conversation.item.input_audio_transcription.completed', 'response.created', 'response.output_audio_transcript.delta']) {
        assert.ok(types.includes(t), `${t} among ${[...new Set(types)].join(', ')}`);
      }
      const heard = await until('response.done and audible agent audio', () => state(s.page), (st) => st.events.some((e) => e.type === 'response.done') && st.peakLevel > 0.01, 15_000);
      const responseDone = heard.events.find((e) => e.type === 'response.done');
      assert.equal(responseDone.response.status, 'completed');
      assert.ok(responseDone.response.usage.output_tokens > 0);
      assert.ok(heard.peakLevel > 0.01, `agent audio level ${heard.peakLevel}`);
    } finally {
      await s.close();
    }
  });
});

describe('OpenAI Agents SDK in Chromium, with an OpenAI-compatible model server', () => {
  let llm: Server;
  let parley: RunningServer;
  const requests: any[] = [];

  before(async () => {
    // Stands in for the operator's LLM: a tool call when offered a tool and asked the time, the tool's
    // answer once its output is in the conversation, a long story when asked for one.
    llm = createServer(async (req: IncomingMessage, res) => {
      let body = '';
      for await (const chunk of req) body += chunk;
      const request = JSON.parse(body);
      requests.push(request);
      const last = request.messages.at(-1);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const send = (delta: object) => res.write(`data: ${JSON.stringify({ choices: [{ delta }] })}\n\n`);
      if (last.role === 'tool') send({ content: `The tool says: ${last.content}` });
      else if (request.tools?.length && /time/i.test(last.content)) {
        send({ tool_calls: [{ index: 0, id: 'call_test1', type: 'function', function: { name: 'get_time', arguments: '' } }] });
        send({ tool_calls: [{ index: 0, function: { arguments: '{}' } }] });
      } else if (/story/i.test(last.content)) for (const sentence of STORY.split('. ')) send({ content: `${sentence}. ` });
      else send({ content: 'Okay.' });
      res.end('data: [DONE]\n\n');
    });
    await new Promise<void>((r) => llm.listen(0, '127.0.0.1', r));
    parley = await startServer({ LLM_BASE_URL: `http://127.0.0.1:${(llm.address() as AddressInfo).port}/v1`, LLM_MODEL: 'stand-in' });
  });
  after(async () => {
    await parley.stop();
    llm.closeAllConnections();
    llm.close();
  });

  test('an interruption: the caller speaking over a long reply stops its audio and the history keeps the truncated reply', async () => {
    const s = await session(parley, [{ silenceMs: 2500 }, 'tell me a story', { silenceMs: 4500 }, 'stop please', { silenceMs: 6000 }], false, true);
    try {
      const cut = await until(
        'the reply to be interrupted and truncated',
        () => state(s.page),
        (st) => st.events.some((e) => e.type === 'conversation.item.truncated') && st.events.some((e) => e.type === 'output_audio_buffer.cleared'),
        30_000,
      );
      const truncated = cut.events.find((e) => e.type === 'conversation.item.truncated');
      // The SDK retrieves the truncated item: its history holds what was heard, not the whole story.
      const final = await until(
        'the history to hold the truncated reply',
        () => state(s.page),
        (st) => st.history.some((i) => i.itemId === truncated.item_id && i.status === 'incomplete'),
        10_000,
      );
      const reply = final.history.find((i) => i.itemId === truncated.item_id);
      const heard = transcriptOf(reply).trim();
      assert.ok(heard.length < STORY.length, `the history keeps only what was heard: "${heard}"`);
      assert.ok(STORY.startsWith(heard), `what was heard is the start of the story: "${heard}"`);
      assert.ok(truncated.audio_end_ms > 0);
    } finally {
      await s.close();
    }
  });

  test('a tool round trip: the model calls the tool, the SDK runs it, the answer uses its output and is spoken', async () => {
    requests.length = 0;
    const s = await session(parley, [{ silenceMs: 2500 }, 'what time is it', { silenceMs: 8000 }], true);
    try {
      const done = await until(
        'the spoken answer after the tool',
        () => state(s.page),
        (st) => st.history.some((i) => i.role === 'assistant' && /tool says/i.test(transcriptOf(i))) && st.peakLevel > 0.01,
        30_000,
      );
      assert.equal(done.toolCalls, 1, 'the SDK ran the tool once');
      const call = done.history.find((i) => i.type === 'function_call');
      assert.equal(call.name, 'get_time');
      assert.equal(call.output, 'It is exactly noon.');
      assert.equal(requests.length, 2);
      assert.deepEqual(requests[0].tools.map((t: any) => t.function.name), ['get_time']);
      const second = requests[1].messages;
      assert.deepEqual(second.at(-2).tool_calls.map((c: any) => [c.id, c.function.name]), [['call_test1', 'get_time']]);
      assert.deepEqual(second.at(-1), { role: 'tool', tool_call_id: 'call_test1', content: 'It is exactly noon.' });
      assert.match(transcriptOf(done.history.find((i) => i.role === 'assistant' && /tool says/i.test(transcriptOf(i)))), /exactly noon/);
    } finally {
      await s.close();
    }
  });
});
