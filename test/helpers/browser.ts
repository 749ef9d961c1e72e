// Headless Chromium (Debian's /usr/bin/chromium through playwright-core) with a fake microphone, and
// a call made from a page exactly as a browser client makes it: client-secrets → ice-config → calls.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Every flag the browser runs with (besides its fresh profile directory and Playwright's pipe). */
export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--use-fake-ui-for-media-stream',
  // A fake camera at 30 fps, as real ones run: the published Orga SDK asks for at least 24 (20 is the default).
  '--use-fake-device-for-media-stream=fps=30',
  '--allow-loopback-in-peer-connection',
  '--autoplay-policy=no-user-gesture-required',
];

export interface LaunchedBrowser {
  browser: Browser;
  /** The browser's temporary profile directory (removed by close()). */
  userDataDir: string;
  /** A new page (in its own context) on the Parley server's origin (GET /healthz), so its API calls are same-origin. */
  openPage(baseUrl: string): Promise<Page>;
  close(): Promise<void>;
}

export interface LaunchOptions {
  /** A WAV file the fake microphone plays (--use-file-for-fake-audio-capture), once per capture. */
  fakeMicrophoneWav?: string;
  /** A Y4M file the fake camera plays (--use-file-for-fake-video-capture), looped. */
  fakeCameraY4m?: string;
}

/**
 * Launches Chromium with exactly CHROMIUM_FLAGS and a fresh temporary --user-data-dir (removed on
 * close), so runs never share a profile. `ignoreDefaultArgs` keeps Playwright from adding flags of
 * its own; it still needs the profile directory and the pipe it drives the browser through.
 */
export async function launchBrowser(opts: LaunchOptions = {}): Promise<LaunchedBrowser> {
  const userDataDir = mkdtempSync(join(tmpdir(), 'parley-chromium-'));
  // %noloop: each capture (each getUserMedia) plays the file from its start once, then silence.
  const microphone = opts.fakeMicrophoneWav ? [`--use-file-for-fake-audio-capture=${opts.fakeMicrophoneWav}%noloop`] : [];
  if (opts.fakeCameraY4m) microphone.push(`--use-file-for-fake-video-capture=${opts.fakeCameraY4m}`);
  const browser = await chromium
    .launch({
      executablePath: CHROMIUM_PATH,
      ignoreDefaultArgs: true,
      args: [...CHROMIUM_FLAGS, ...microphone, `--user-data-dir=${userDataDir}`, '--remote-debugging-pipe'],
      timeout: 30_000,
    })
    .catch((err: Error) => {
      rmSync(userDataDir, { recursive: true, force: true });
      throw err;
    });
  return {
    browser,
    userDataDir,
    async openPage(baseUrl) {
      const context = await browser.newContext();
      const page = await context.newPage();
      page.once('close', () => void context.close().catch(() => {}));
      const res = await page.goto(`${baseUrl}/healthz`);
      if (!res?.ok()) throw new Error(`GET /healthz answered ${res?.status()}`);
      return page;
    },
    async close() {
      await browser.close().catch(() => {});
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

export interface PageCallOptions {
  /** Server API key: the page trades it for an ephemeral token (tests only; a real page asks its backend). */
  apiKey: string;
  iceTransportPolicy?: 'all' | 'relay';
  /** Send the fake microphone's audio (default true); false offers audio sendrecv without a track. */
  audio?: boolean;
  params?: Record<string, unknown>;
  /** Wait until this many audio RTP packets have arrived from the server (default 0: don't wait). */
  minInboundPackets?: number;
  /** Leave the call open after measuring (default false: the page hangs up). */
  keepOpen?: boolean;
  timeoutMs?: number;
}

export interface PageCallResult {
  conversationId: string;
  iceServers: { urls: string[]; username?: string; credential?: string }[];
  connectionState: string;
  iceConnectionState: string;
  dataChannelState: string;
  /** Data-channel events received from the server. */
  events: any[];
  /** Types (host, srflx, relay) of the candidates the page gathered and sent in the offer. */
  offeredCandidateTypes: string[];
  /** Candidate types of the pair ICE selected. */
  selectedPair: { local: string; remote: string; localProtocol: string } | null;
  inboundAudio: { packetsReceived: number; bytesReceived: number; packetsLost: number; jitter: number; totalAudioEnergy?: number } | null;
  outboundAudio: { packetsSent: number; bytesSent: number } | null;
}

// Runs in the page. A plain-JS string, not a compiled function: tsx's helpers do not exist there.
const PAGE_CALL = `async (opts) => {
  const deadline = Date.now() + opts.timeoutMs;
  const until = async (check, what) => {
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error('timed out waiting for ' + what);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const api = async (path, init, expect) => {
    const res = await fetch(path, init);
    const body = await res.json().catch(() => null);
    if (res.status !== 200) throw new Error(path + ' answered ' + res.status + ': ' + JSON.stringify(body));
    return body;
  };
  const secret = await api('/v1/realtime/client-secrets', { method: 'POST', headers: { Authorization: 'Bearer ' + opts.apiKey } });
  const auth = { Authorization: 'Bearer ' + secret.ephemeral_token };
  const { iceServers } = await api('/v1/realtime/ice-config', { headers: auth });

  const pc = new RTCPeerConnection({ iceServers, iceTransportPolicy: opts.iceTransportPolicy });
  if (opts.audio) {
    const stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    pc.addTransceiver(stream.getAudioTracks()[0], { direction: 'sendrecv', streams: [stream] });
  } else {
    pc.addTransceiver('audio', { direction: 'sendrecv' });
  }
  const channel = pc.createDataChannel('orga-realtime-client-events');
  const events = [];
  channel.onmessage = (e) => { try { events.push(JSON.parse(e.data)); } catch { events.push({ type: '<unparsable>' }); } };
  const candidates = [];
  pc.onicecandidate = (e) => { if (e.candidate) candidates.push(e.candidate.toJSON()); };
  await pc.setLocalDescription(await pc.createOffer());
  await until(() => pc.iceGatheringState === 'complete', 'ICE gathering');
  const call = await api('/v1/realtime/calls', {
    method: 'POST',
    headers: { ...auth, 'Content-Type': 'application/json' },
    body: JSON.stringify({ offer: { sdp: pc.localDescription.sdp, type: 'offer', candidates }, params: opts.params }),
  });
  await pc.setRemoteDescription(call.answer);
  await until(() => pc.connectionState === 'connected' && channel.readyState === 'open', 'connected and data channel open');

  const audioStats = async () => {
    const out = { inbound: null, outbound: null, pair: null, candidates: new Map() };
    (await pc.getStats()).forEach((s) => {
      if (s.type === 'inbound-rtp' && s.kind === 'audio') out.inbound = s;
      if (s.type === 'outbound-rtp' && s.kind === 'audio') out.outbound = s;
      if (s.type === 'transport' && s.selectedCandidatePairId) out.pair = s.selectedCandidatePairId;
      out.candidates.set(s.id, s);
    });
    return out;
  };
  await until(async () => ((await audioStats()).inbound?.packetsReceived ?? 0) >= opts.minInboundPackets, opts.minInboundPackets + ' inbound audio packets');
  const stats = await audioStats();
  const pair = stats.pair ? stats.candidates.get(stats.pair) : null;
  const local = pair ? stats.candidates.get(pair.localCandidateId) : null;
  const remote = pair ? stats.candidates.get(pair.remoteCandidateId) : null;
  const result = {
    conversationId: call.conversation_id,
    iceServers,
    connectionState: pc.connectionState,
    iceConnectionState: pc.iceConnectionState,
    dataChannelState: channel.readyState,
    events,
    offeredCandidateTypes: candidates.map((c) => / typ (\\w+)/.exec(c.candidate)?.[1] ?? '?'),
    selectedPair: local && remote ? { local: local.candidateType, remote: remote.candidateType, localProtocol: local.relayProtocol ?? local.protocol } : null,
    inboundAudio: stats.inbound && {
      packetsReceived: stats.inbound.packetsReceived, bytesReceived: stats.inbound.bytesReceived,
      packetsLost: stats.inbound.packetsLost, jitter: stats.inbound.jitter, totalAudioEnergy: stats.inbound.totalAudioEnergy,
    },
    outboundAudio: stats.outbound && { packetsSent: stats.outbound.packetsSent, bytesSent: stats.outbound.bytesSent },
  };
  if (opts.keepOpen) window.parleyCall = { pc, channel }; else pc.close();
  return result;
}`;

/** Makes a call from `page` (opened with openPage) and reports what the browser saw. */
export async function callFromPage(page: Page, opts: PageCallOptions): Promise<PageCallResult> {
  const args = {
    apiKey: opts.apiKey,
    iceTransportPolicy: opts.iceTransportPolicy ?? 'all',
    audio: opts.audio ?? true,
    params: opts.params ?? {},
    minInboundPackets: opts.minInboundPackets ?? 0,
    keepOpen: opts.keepOpen ?? false,
    timeoutMs: opts.timeoutMs ?? 20_000,
  };
  return page.evaluate(`(${PAGE_CALL})(${JSON.stringify(args)})`) as Promise<PageCallResult>;
}
