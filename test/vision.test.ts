// The agent sees: the published Orga React SDK in Chromium with a fake camera (a clip made by ffmpeg
// at test time: red, then blue) and a fake microphone asking "what color do you see" twice. With
// `video` in the session's modalities, the offline model names the camera's colour at each turn (the
// key frame asked for at the end of the turn, decoded by ffmpeg); without it, it makes no colour claim.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { launchBrowser, type LaunchedBrowser } from './helpers/browser.ts';
import { openOrgaPage, readWire, startOrgaApp, waitForOrga, type OrgaApp } from './helpers/orgaSdk.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { speechWav } from './helpers/speech.ts';

const COLOURS = /\b(red|blue|green|yellow|orange|purple|pink|cyan|white|black|grey|brown)\b/i;
const items = (sender: 'user' | 'assistant') => `(o.state.conversationItems ?? []).filter((i) => i.sender === '${sender}')`;

let server: RunningServer;
let app: OrgaApp;
let browser: LaunchedBrowser;
let dir: string;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'parley-vision-'));
  // 320×240 at 15 fps (the least the SDK's videoQuality "low" takes): red for 6 s, then blue for 10 s;
  // the camera starts just before the microphone, whose first question ends about 3 s in, the second
  // about 12 s in (after the first answer has played: the browser's echo canceller would garble it).
  const clip = join(dir, 'camera.y4m');
  execFileSync('ffmpeg', [
    '-hide_banner', '-loglevel', 'error',
    '-f', 'lavfi', '-i', 'color=c=red:s=320x240:r=15:d=6',
    '-f', 'lavfi', '-i', 'color=c=blue:s=320x240:r=15:d=10',
    '-filter_complex', '[0:v][1:v]concat=n=2:v=1[v]', '-map', '[v]', '-pix_fmt', 'yuv420p', clip,
  ]);
  const question = speechWav(join(dir, 'questions.wav'), [{ silenceMs: 1500 }, 'what color do you see', { silenceMs: 8000 }, 'what color do you see', { silenceMs: 3000 }]);
  server = await startServer();
  app = await startOrgaApp(server);
  browser = await launchBrowser({ fakeMicrophoneWav: question, fakeCameraY4m: clip });
});

after(async () => {
  await browser?.close();
  await app?.close();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('the camera reaches the model (@orga-ai/react, offline model)', () => {
  test('camera then mic (modalities with video): the colour shown at each question, red then blue', async () => {
    const page = await openOrgaPage(browser, app, server.baseUrl, '?video=low');
    try {
      await page.click('#start');
      await waitForOrga(page, 'connected', `o.state.connectionState === 'connected'`);
      await page.click('#toggle-camera');
      await waitForOrga(page, 'the camera on', 'o.state.isCameraOn');
      await page.click('#enable-mic');
      // A stray turn (a breath of the synthesised voice heard as words) may get an answer of its own: the
      // answers to the two questions are looked for among them.
      const said = (colour: string) => `${items('assistant')}.some((i) => /\\b${colour}\\b/.test(i.content.message))`;
      await waitForOrga(page, 'the answer naming red', said('red'), 60_000);
      const o = await waitForOrga(page, 'the answer naming blue, after the camera changed colour', said('blue'), 60_000);
      const sent = (await readWire(page)).filter((m) => m.dir === 'out' && m.message.event === 'session.update').map((m) => m.message.data.modalities);
      assert.deepEqual(sent.at(-1), ['video'], 'the SDK asked for video');
      const answers = o.state.conversationItems!.filter((i) => i.sender === 'assistant').map((i) => i.content.message);
      const red = answers.findIndex((a) => /\bred\b/.test(a));
      const blue = answers.findIndex((a) => /\bblue\b/.test(a));
      assert.ok(red < blue, `red first, then blue: ${JSON.stringify(answers)}`);
      assert.match(answers[red]!, /not a vision model/);
    } finally {
      await page.close();
    }
  });

  test('mic then camera (the SDK sends modalities without video): no colour claim', async () => {
    const page = await openOrgaPage(browser, app, server.baseUrl, '?video=low');
    try {
      await page.click('#start');
      await waitForOrga(page, 'connected', `o.state.connectionState === 'connected'`);
      await page.click('#enable-mic');
      await waitForOrga(page, 'the mic on', 'o.state.isMicOn');
      await page.click('#toggle-camera');
      const o = await waitForOrga(page, 'an answer', `${items('assistant')}.length >= 1`, 60_000);
      const sent = (await readWire(page)).filter((m) => m.dir === 'out' && m.message.event === 'session.update').map((m) => m.message.data.modalities);
      assert.ok(!sent.at(-1).includes('video'), `the last modalities sent: ${JSON.stringify(sent)}`);
      const answer = o.state.conversationItems!.find((i) => i.sender === 'assistant')!.content.message;
      assert.match(answer, /can't see/);
      assert.doesNotMatch(answer, COLOURS);
    } finally {
      await page.close();
    }
  });
});
