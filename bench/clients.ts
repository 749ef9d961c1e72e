// The two client families side by side on one default Parley server, each the published package in
// headless Chromium with a fake microphone asking "what time is it": the Orga React SDK
// (@orga-ai/react, test/helpers/orgaSdk.ts) and OpenAI's Agents SDK (@openai/agents-realtime,
// test/helpers/openaiApp.ts). Measured in the page, the same way for both, by an init script that
// watches every RTCPeerConnection and getUserMedia stream the SDK makes (it changes nothing they do):
//   start → connected:     from the app's start to the peer connection's "connected";
//   start → ready:         OpenAI only: until connect() resolves (it waits for session.updated);
//   voice-to-voice:        from the end of the caller's speech on the microphone stream the SDK
//                          sends to the first audible agent audio on the track it receives.
//
//   node --import tsx bench/clients.ts [--calls 10]
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import type { Page } from 'playwright-core';
import { launchBrowser } from '../test/helpers/browser.ts';
import { startOpenAiApp } from '../test/helpers/openaiApp.ts';
import { openOrgaPage, startOrgaApp } from '../test/helpers/orgaSdk.ts';
import { http, startServer, type RunningServer } from '../test/helpers/server.ts';
import { speechWav } from '../test/helpers/speech.ts';

const { values } = parseArgs({ options: { calls: { type: 'string', default: '10' } } });
const calls = Number(values.calls);

/** Loudness timelines of the microphone sent and the agent audio received, and when the peer connected. */
const PROBE = `(() => {
  const probe = (window.probe = { mic: [], agent: [], connectedAt: null, startedAt: null });
  const ctx = new AudioContext();
  const meter = (stream, into) => {
    const analyser = ctx.createAnalyser();
    analyser.fftSize = 512;
    ctx.createMediaStreamSource(stream).connect(analyser);
    const buf = new Float32Array(analyser.fftSize);
    setInterval(() => {
      analyser.getFloatTimeDomainData(buf);
      let sum = 0;
      for (const v of buf) sum += v * v;
      if (Math.sqrt(sum / buf.length) > 0.01) into.push(performance.now());
    }, 5);
  };
  const gum = navigator.mediaDevices.getUserMedia.bind(navigator.mediaDevices);
  navigator.mediaDevices.getUserMedia = async (c) => {
    const stream = await gum(c);
    if (stream.getAudioTracks().length) meter(new MediaStream(stream.getAudioTracks()), probe.mic);
    return stream;
  };
  const Native = window.RTCPeerConnection;
  window.RTCPeerConnection = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('track', (e) => e.track.kind === 'audio' && meter(new MediaStream([e.track]), probe.agent));
      this.addEventListener('connectionstatechange', () => this.connectionState === 'connected' && (probe.connectedAt ??= performance.now()));
    }
  };
})()`;

interface Probe {
  mic: number[];
  agent: number[];
  connectedAt: number | null;
  startedAt: number | null;
}

/** The caller's speech ended at the last loud microphone sample; the agent answered at its first loud sample after. */
function voiceToVoice(p: Probe): number | undefined {
  const spokeUntil = p.mic.at(-1);
  const answered = spokeUntil === undefined ? undefined : p.agent.find((t) => t > spokeUntil);
  return answered === undefined ? undefined : answered - spokeUntil!;
}

const percentile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.max(0, Math.ceil((q / 100) * xs.length) - 1))]!;

async function waitForNoCalls(server: RunningServer): Promise<void> {
  for (let i = 0; i < 200 && (await http(server.baseUrl, '/healthz')).body?.calls !== 0; i++) await sleep(50);
}

const dir = mkdtempSync(join(tmpdir(), 'parley-bench-clients-'));
const wav = speechWav(join(dir, 'mic.wav'), [{ silenceMs: 1500 }, 'what time is it', { silenceMs: 5000 }]);
const server = await startServer();
const orgaApp = await startOrgaApp(server);
const openAiApp = await startOpenAiApp(server);
const browser = await launchBrowser({ fakeMicrophoneWav: wav });
const rows: Record<string, Record<string, number[]>> = { orga: {}, openai: {} };
const add = (client: string, row: string, v: number | undefined) => v !== undefined && (rows[client]![row] ??= []).push(v);

async function measure(client: 'orga' | 'openai'): Promise<void> {
  let page: Page;
  if (client === 'orga') {
    page = await openOrgaPage(browser, orgaApp, server.baseUrl, '', undefined, PROBE);
  } else {
    const context = await browser.browser.newContext();
    await context.addInitScript(PROBE);
    page = await context.newPage();
    await page.goto(openAiApp.url);
    await page.waitForFunction('window.app !== undefined');
  }
  try {
    await page.evaluate('window.probe.startedAt = performance.now()');
    if (client === 'orga') await page.click('#start');
    else await page.evaluate(`window.app.start(${JSON.stringify({ parley: server.baseUrl, withTool: false, rawMicrophone: false })})`);
    await page.waitForFunction('window.probe.connectedAt !== null', undefined, { timeout: 20_000 });
    // The Orga SDK sends the microphone once asked (its README's enableMic).
    if (client === 'orga') await page.click('#enable-mic');
    // The answer: loud agent audio after the caller's speech (the clip's 5 s of silence follow it).
    await page.waitForFunction('(() => { const p = window.probe; const end = p.mic.at(-1); return end !== undefined && performance.now() - end > 1500 && p.agent.some((t) => t > end); })()', undefined, { timeout: 20_000, polling: 50 });
    const p = (await page.evaluate('window.probe')) as Probe;
    add(client, 'start → connected', p.connectedAt! - p.startedAt!);
    if (client === 'openai') add(client, 'start → connect() resolved', ((await page.evaluate('window.app.connectedAt')) as number) - p.startedAt!);
    add(client, 'voice-to-voice at the client', voiceToVoice(p));
    // The server's own share: end of speech → first audio queued (its stage timings event).
    const timings = (await page.evaluate(
      client === 'orga'
        ? "window.orgaWire.map((w) => JSON.parse(w.data)).find((m) => m.type === 'response.audio.started')?.timings"
        : "window.app.events.find((e) => e.type === 'parley.response.timings')?.timings",
    )) as { voice_to_voice_ms?: number } | undefined;
    add(client, 'voice-to-voice at the server (end of speech → first audio queued)', timings?.voice_to_voice_ms);
  } finally {
    await page.close();
    await waitForNoCalls(server);
  }
}

try {
  for (const client of ['orga', 'openai'] as const) await measure(client).catch(() => {}); // warm-up
  for (let i = 0; i < calls; i++) {
    for (const client of ['orga', 'openai'] as const) {
      await measure(client).catch((err: Error) => process.stderr.write(`${client} call ${i + 1} failed: ${err.message.split('\n')[0]}\n`));
    }
  }
} finally {
  await browser.close();
  await orgaApp.close();
  await openAiApp.close();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}

console.log(`\n${calls} calls per client, default server, ${cpus().length} cores, load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}, ${new Date().toISOString()}\n`);
console.log('| client | measure | calls | p50 ms | p95 ms |\n|---|---|---:|---:|---:|');
const name = { orga: '@orga-ai/react 1.0.5', openai: '@openai/agents-realtime 0.20.0' };
for (const client of ['orga', 'openai'] as const) {
  for (const [row, xs] of Object.entries(rows[client]!)) console.log(`| ${name[client]} | ${row} | ${xs.length} | ${Math.round(percentile(xs, 50))} | ${Math.round(percentile(xs, 95))} |`);
}
