// The published Orga SDKs, unchanged, against a default Parley server: a React app built with
// @orga-ai/react 1.0.5 (and @orga-ai/core 1.0.0) exactly as its README shows, its backend-proxy route
// built with @orga-ai/node 1.0.0-beta.1's getSessionConfig(), headless Chromium with a fake microphone
// asking a question (spoken by flite at test time), and the SDK's fixed vendor host routed to Parley.
// Everything is asserted through the SDK's own state and callbacks (and, for what it sends, the wire).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { launchBrowser, type LaunchedBrowser } from './helpers/browser.ts';
import { openOrgaPage, readWire, startOrgaApp, waitForOrga, type OrgaApp } from './helpers/orgaSdk.ts';
import { http, startServer, type RunningServer } from './helpers/server.ts';
import { speakToWav } from './helpers/speech.ts';
import { until } from './helpers/wait.ts';

const has = (name: string) => `o.events.some((e) => e.name === ${JSON.stringify(name)})`;
const items = (sender: 'user' | 'assistant') => `(o.state.conversationItems ?? []).filter((i) => i.sender === '${sender}')`;

let server: RunningServer;
let app: OrgaApp;
let browser: LaunchedBrowser;
let dir: string;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'parley-orga-'));
  const question = join(dir, 'what-time-is-it.wav');
  speakToWav('What time is it?', question);
  server = await startServer(); // the defaults of `npm start` (the test helper only picks free ports)
  app = await startOrgaApp(server);
  browser = await launchBrowser({ fakeMicrophoneWav: question });
});

after(async () => {
  await browser?.close();
  await app?.close();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('@orga-ai/react 1.0.5 with @orga-ai/node 1.0.0-beta.1 as its backend proxy', () => {
  test('the SDK posts to a fixed vendor host, which the test routes to Parley', () => {
    assert.equal(app.vendorOrigin, 'https://api.orga-ai.com');
  });

  test("default voice (alloy): connects, is heard, answers aloud, and survives mic and camera toggles", async () => {
    const page = await openOrgaPage(browser, app, server.baseUrl);
    try {
      await page.click('#start');
      let o = await waitForOrga(page, 'connected with session and conversation', `o.state.connectionState === 'connected' && ${has('onSessionConnected')} && ${has('onSessionCreated')} && ${has('onConversationCreated')}`);
      assert.deepEqual(app.proxied, [{ status: 200 }], 'the backend proxy got a session config from Parley through the Node SDK');
      const created = o.events.find((e) => e.name === 'onSessionCreated')!.data;
      assert.equal(created.type, 'session.created');
      assert.equal(created.session.voice, 'alloy', "the SDK's default voice is accepted");
      assert.equal(created.session.model, 'orga-1-beta');
      assert.equal(created.session.return_transcription, true, 'enableTranscriptions reached the server');
      const conversation = o.events.find((e) => e.name === 'onConversationCreated')!.data;
      assert.equal(conversation.type, 'conversation.created');
      assert.match(o.state.conversationId ?? '', /^conv_/);
      assert.equal(conversation.conversation.id, o.state.conversationId);
      assert.equal(created.session.id, o.state.conversationId);

      // The README's mic button: the SDK sends session.update with modalities [] and streams the mic.
      await page.click('#enable-mic');
      o = await waitForOrga(page, "the user's transcript and the assistant's reply", `${items('user')}.length >= 1 && ${items('assistant')}.length >= 1`, 60_000);
      const [heard] = o.state.conversationItems!.filter((i) => i.sender === 'user');
      const [reply] = o.state.conversationItems!.filter((i) => i.sender === 'assistant');
      assert.match(heard!.content.message, /\btime\b/);
      assert.match(reply!.content.message, /^It is \d{1,2}:\d\d/);
      assert.equal(reply!.conversationId, o.state.conversationId);
      const sent = (await readWire(page)).filter((m) => m.dir === 'out').map((m) => m.message);
      assert.ok(
        sent.some((m) => m.event === 'session.update' && Array.isArray(m.data.modalities) && m.data.modalities.length === 0),
        `the published SDK sent modalities [] and was heard all the same: ${JSON.stringify(sent)}`,
      );
      o = await waitForOrga(page, 'the agent audible on aiAudioStream', 'o.state.hasAiAudioStream && o.audio.audibleMs >= 500', 30_000);
      assert.ok(o.audio.peak > 0.05, `agent audio is audible (peak RMS ${o.audio.peak})`);

      // Toggles mid-call: camera on, mic off and on again (a new capture asks the question again), camera off.
      await page.click('#toggle-camera');
      await waitForOrga(page, 'camera on', `o.state.isCameraOn && ${has('toggleCamera done')}`);
      await page.click('#toggle-mic');
      await waitForOrga(page, 'mic off', '!o.state.isMicOn');
      await page.click('#toggle-mic');
      o = await waitForOrga(page, 'asked and answered again after the mic came back', `o.state.isMicOn && ${items('user')}.length >= 2 && ${items('assistant')}.length >= 2`, 60_000);
      await page.click('#toggle-camera');
      o = await waitForOrga(page, 'camera off', `!o.state.isCameraOn && o.events.filter((e) => e.name === 'toggleCamera done').length === 2`);
      assert.equal(o.state.connectionState, 'connected', 'the call is still up');
      assert.deepEqual(o.events.filter((e) => /onError|failed|rejected/.test(e.name)), [], 'no SDK errors');
      const states = o.events.filter((e) => e.name === 'onConnectionStateChange').map((e) => e.data);
      assert.deepEqual(states, ['connected'], 'never disconnected');
      const errors = (await readWire(page)).filter((m) => m.dir === 'in' && m.message.type === 'error');
      assert.deepEqual(errors, [], 'Parley accepted every session.update the SDK sent');

      await page.click('#end');
      await waitForOrga(page, 'session ended', has('onSessionEnd'));
      const record = await until(
        'the call recorded as hung up',
        () => http(server.baseUrl, `/v1/realtime/conversations/${o.state.conversationId}`, { token: server.devKey }),
        (r) => r.body?.state === 'ended',
      );
      assert.equal(record.body.end_reason, 'hangup');
    } finally {
      await page.close();
    }
  });

  test('OrgaAI.init({ voice: "Sofía" }) (a newer-source voice): connects, events, and audible agent audio', async () => {
    const page = await openOrgaPage(browser, app, server.baseUrl, `?voice=${encodeURIComponent('Sofía')}`);
    try {
      await page.click('#start');
      let o = await waitForOrga(page, 'connected', `${has('onSessionConnected')} && ${has('onSessionCreated')} && ${has('onConversationCreated')}`);
      assert.equal(o.events.find((e) => e.name === 'onSessionCreated')!.data.session.voice, 'Sofía');
      assert.equal(o.events.find((e) => e.name === 'onConversationCreated')!.data.conversation.id, o.state.conversationId);
      await page.click('#enable-mic');
      o = await waitForOrga(page, 'a reply heard on aiAudioStream', `${items('assistant')}.length >= 1 && o.audio.audibleMs >= 500`, 60_000);
      assert.ok(o.audio.peak > 0.05, `agent audio is audible (peak RMS ${o.audio.peak})`);
      assert.deepEqual(o.events.filter((e) => /onError|failed|rejected/.test(e.name)), []);
      assert.equal(o.state.connectionState, 'connected');
    } finally {
      await page.close();
    }
  });
});
