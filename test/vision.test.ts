// The agent sees: the published Orga React SDK in Chromium with a fake camera (a clip made by ffmpeg
// at test time: red, then blue) and a fake microphone asking "what color do you see" twice. With
// `video` in the session's modalities, the offline model names the camera's colour at each turn (the
// key frame asked for at the end of the turn, decoded by ffmpeg); without it, it makes no colour claim.
// Then a stand-in OpenAI-compatible vision model on loopback (a second server pointed at it) gets the
// camera's picture in the user message, and its answer is what the caller hears.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { launchBrowser, type LaunchedBrowser } from './helpers/browser.ts';
import { openOrgaPage, readWire, startOrgaApp, waitForOrga, type OrgaApp } from './helpers/orgaSdk.ts';
import { http, startServer, type RunningServer } from './helpers/server.ts';
import { startModelBackends, type ModelBackends } from './helpers/modelBackends.ts';
import { speechWav } from './helpers/speech.ts';
import { until } from './helpers/wait.ts';

const COLOURS = /\b(red|blue|green|yellow|orange|purple|pink|cyan|white|black|grey|brown)\b/i;
const items = (sender: 'user' | 'assistant') => `(o.state.conversationItems ?? []).filter((i) => i.sender === '${sender}')`;

let server: RunningServer;
let app: OrgaApp;
let browser: LaunchedBrowser;
let dir: string;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'parley-vision-'));
  // 320×240 at 15 fps (the least the SDK's videoQuality "low" takes): red for 7 s, then blue for 11 s
  // (31 MB of Y4M); the camera starts just before the microphone, whose first question ends about 3 s
  // in, the second about 12 s in (after the first answer has played: the browser's echo canceller would
  // garble it). Seconds of margin each side of both, for a busy machine.
  const clip = join(dir, 'camera.y4m');
  execFileSync('ffmpeg', [
    '-hide_banner', '-loglevel', 'error',
    '-f', 'lavfi', '-i', 'color=c=red:s=320x240:r=15:d=7',
    '-f', 'lavfi', '-i', 'color=c=blue:s=320x240:r=15:d=11',
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
  test('camera then mic (modalities with video): the colour shown at each question, red then blue', async (t) => {
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
      // The conversation's record keeps each turn's picture as a thumbnail (what the console shows).
      const record = await until(
        'the turns recorded with their pictures',
        async () => (await http(server.baseUrl, `/v1/realtime/conversations/${o.state.conversationId}`, { token: server.devKey })).body,
        (r) => (r.items ?? []).filter((i: any) => i.role === 'user' && i.image).length >= 2,
      );
      assert.match(record.items.find((i: any) => i.image).image, /^data:image\/jpeg;base64,\/9j\//);
      // The node's metrics count the pictures; the decode times are printed (not asserted).
      const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
      assert.ok(Number(/^parley_vision_frames_sent_total (\d+)/m.exec(metrics)?.[1]) >= 2, 'parley_vision_frames_sent_total');
      t.diagnostic(`key frame request → JPEG: ${/^parley_vision_decode_seconds_sum (\S+)/m.exec(metrics)?.[1]} s over ${/^parley_vision_decode_seconds_count (\S+)/m.exec(metrics)?.[1]} pictures`);
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
      // The answer to the question (a stray turn's answer, if any, is not it): the vision rule's words.
      const o = await waitForOrga(page, 'the answer about the picture', `${items('assistant')}.some((i) => /can't see|vision model/.test(i.content.message))`, 60_000);
      const sent = (await readWire(page)).filter((m) => m.dir === 'out' && m.message.event === 'session.update').map((m) => m.message.data.modalities);
      assert.ok(!sent.at(-1).includes('video'), `the last modalities sent: ${JSON.stringify(sent)}`);
      const answers = o.state.conversationItems!.filter((i) => i.sender === 'assistant').map((i) => i.content.message);
      const answer = answers.find((a) => /can't see|vision model/.test(a))!;
      assert.match(answer, /can't see anything/);
      assert.doesNotMatch(answer, COLOURS);
      assert.ok(!answers.some((a) => /the picture is/.test(a)), `no colour claim in any answer: ${JSON.stringify(answers)}`);
    } finally {
      await page.close();
    }
  });
});

/** The colour of a JPEG, as the stand-in vision model sees it: its average pixel's strongest channel. */
function colourOf(jpeg: Buffer): string {
  const rgb = execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-f', 'image2pipe', '-i', 'pipe:0', '-vf', 'scale=1:1:flags=area', '-f', 'rawvideo', '-pix_fmt', 'rgb24', 'pipe:1'], { input: jpeg });
  const [r, g, b] = [rgb[0]!, rgb[1]!, rgb[2]!];
  return r > g && r > b ? 'red' : g > b ? 'green' : 'blue';
}

describe('a stand-in OpenAI-compatible vision model (LLM_BASE_URL)', () => {
  let vision: ModelBackends;
  let llmServer: RunningServer;
  let llmApp: OrgaApp;
  const asked: { text: string; images: string[] }[] = [];

  before(async () => {
    vision = await startModelBackends({
      intercept: (req, res) => {
        if (req.path !== '/v1/chat/completions') return false;
        const body = JSON.parse(req.body.toString());
        const user = body.messages.filter((m: any) => m.role === 'user').at(-1);
        const parts = Array.isArray(user.content) ? user.content : [{ type: 'text', text: user.content }];
        const images = parts.filter((p: any) => p.type === 'image_url').map((p: any) => p.image_url.url as string);
        asked.push({ text: parts.filter((p: any) => p.type === 'text').map((p: any) => p.text).join(' '), images });
        const answer = images.length ? `I see ${colourOf(Buffer.from(images.at(-1)!.split(',')[1]!, 'base64'))}.` : 'I see nothing.';
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(`data: ${JSON.stringify({ choices: [{ delta: { content: answer } }] })}\n\ndata: [DONE]\n\n`);
        return true;
      },
    });
    llmServer = await startServer({ LLM_BASE_URL: vision.baseUrl, LLM_MODEL: 'stand-in-vision' });
    llmApp = await startOrgaApp(llmServer);
  });

  after(async () => {
    await llmApp?.close();
    await llmServer?.stop();
    await vision?.close();
  });

  test("the camera's frame reaches the model in the user message, and its answer is what the caller hears", async () => {
    const page = await openOrgaPage(browser, llmApp, llmServer.baseUrl, '?video=low');
    try {
      await page.click('#start');
      await waitForOrga(page, 'connected', `o.state.connectionState === 'connected'`);
      await page.click('#toggle-camera');
      await waitForOrga(page, 'the camera on', 'o.state.isCameraOn');
      await page.click('#enable-mic');
      const o = await waitForOrga(page, "the vision model's answer", `${items('assistant')}.some((i) => /I see/.test(i.content.message))`, 60_000);
      const withImage = asked.find((a) => a.images.length > 0);
      assert.ok(withImage, `a request with the picture: ${JSON.stringify(asked.map((a) => a.text))}`);
      assert.match(withImage.images[0]!, /^data:image\/jpeg;base64,/);
      assert.match(withImage.text, /you see/, 'the words of the turn beside its picture');
      const answer = o.state.conversationItems!.find((i) => i.sender === 'assistant' && /I see/.test(i.content.message))!.content.message;
      assert.equal(answer, 'I see red.', 'the camera showed red at the first question');
    } finally {
      await page.close();
    }
  });
});
