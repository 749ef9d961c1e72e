// A client flooding OpenAI's WebSocket door, in a process of its own so that the test process (which
// watches a bystander) is not the one slowed down. It prints `ready` once set up, floods on a line
// from stdin, and prints one JSON line, its report:
//
//   bad-keys <count>: that many upgrades of /v1/realtime with made-up API keys, 64 at a time;
//     report { statuses: { "<status>": n } }.
//   appends <bytes a second> <message bytes> <seconds>: a session (the API key) sent
//     input_audio_buffer.append messages of about that size (noise, so the VAD works) at that rate;
//     report { sentBytes, seconds, errorCodes, alive } (alive: a session.update answered afterwards).
//   bombs <sessions>: that many sessions each sent two 15 MiB messages that are no audio, 5 M empty
//     arrays (variant by session: bare, under a session.update, under an append's `audio`) and
//     7.5 M levels of nesting under an append's `audio`, then a session.update; report
//     { sessions: [{ variant, errors: [{ code, eventId }], alive, closeCode }], seconds }.
//
//   node --import tsx test/helpers/socketFlooder.ts <baseUrl> <apiKey> bad-keys|appends …
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import WebSocket from 'ws';

const [baseUrl, apiKey, mode, ...args] = process.argv.slice(2) as [string, string, string, ...string[]];
const socketUrl = `${baseUrl.replace(/^http/, 'ws')}/v1/realtime?model=gpt-realtime`;

const go = () => new Promise<void>((resolve) => createInterface({ input: process.stdin }).once('line', () => resolve()));

/** The status an upgrade is answered with (101 when it is accepted). */
function upgradeStatus(key: string): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(socketUrl, { headers: { authorization: `Bearer ${key}` } });
    ws.on('unexpected-response', (_req, res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
      ws.terminate();
    });
    ws.on('open', () => {
      resolve(101);
      ws.terminate();
    });
    ws.on('error', () => resolve(0));
  });
}

async function badKeys(count: number): Promise<object> {
  const statuses: Record<string, number> = {};
  let next = 0;
  const worker = async () => {
    while (next < count) {
      next++;
      const status = await upgradeStatus(`sk_parley_ai_${randomBytes(30).toString('base64url')}`);
      statuses[status] = (statuses[status] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: 64 }, worker));
  return { statuses };
}

/** A base64 append of about `bytes`: low noise, PCM 16-bit. */
function appendMessage(bytes: number): string {
  const pcm = Buffer.alloc(Math.floor((bytes * 3) / 4 / 2) * 2);
  for (let i = 0; i < pcm.length; i += 2) pcm.writeInt16LE(Math.round((Math.random() - 0.5) * 6000), i);
  return JSON.stringify({ type: 'input_audio_buffer.append', audio: pcm.toString('base64') });
}

async function appends(bytesPerSecond: number, messageBytes: number, seconds: number): Promise<object> {
  const ws = new WebSocket(socketUrl, { headers: { authorization: `Bearer ${apiKey}` }, perMessageDeflate: false });
  const events: { type: string; error?: { code?: string } }[] = [];
  ws.on('message', (data) => events.push(JSON.parse(String(data))));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('unexpected-response', (_req, res) => reject(new Error(`refused: ${res.statusCode}`)));
  });
  const message = appendMessage(messageBytes);
  console.log('ready');
  await go();
  let sentBytes = 0;
  const startedAt = performance.now();
  // Every 10 ms, what the rate allows so far; held while the socket's own buffer is full (the
  // server reads no faster than it handles).
  while (performance.now() - startedAt < seconds * 1000 && ws.readyState === WebSocket.OPEN) {
    const due = (bytesPerSecond * (performance.now() - startedAt)) / 1000;
    while (sentBytes < due && ws.bufferedAmount < 8 * 1024 * 1024) {
      ws.send(message);
      sentBytes += message.length;
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  const flooded = (performance.now() - startedAt) / 1000;
  const from = events.length;
  // Once a second: an update sent while the session is still over its event rate is dropped unread.
  const deadline = performance.now() + 60_000;
  while (!events.slice(from).some((e) => e.type === 'session.updated') && ws.readyState === WebSocket.OPEN && performance.now() < deadline) {
    ws.send(JSON.stringify({ type: 'session.update', session: { type: 'realtime', instructions: 'Still here?' } }));
    await new Promise((r) => setTimeout(r, 1000));
  }
  const alive = events.slice(from).some((e) => e.type === 'session.updated');
  ws.close();
  const errorCodes = [...new Set(events.filter((e) => e.type === 'error').map((e) => e.error?.code))];
  return { sentBytes, seconds: flooded, errorCodes, alive };
}

/** The two messages of a session of `bombs`: 15 MB each, no audio in them. */
function bombMessages(variant: number, session: number): string[] {
  const arrays = `[${'[],'.repeat(5_000_000 - 1)}[]]`;
  const deep = `${'['.repeat(7_500_000)}${']'.repeat(7_500_000)}`;
  const manyArrays = [
    arrays,
    `{"event_id":"evt_${session}_a","type":"session.update","session":{"instructions":${arrays}}}`,
    `{"event_id":"evt_${session}_a","type":"input_audio_buffer.append","audio":${arrays}}`,
  ][variant]!;
  return [manyArrays, `{"event_id":"evt_${session}_d","type":"input_audio_buffer.append","audio":${deep}}`];
}

async function bombs(sessions: number): Promise<object> {
  const opened = await Promise.all(
    Array.from({ length: sessions }, async (_, i) => {
      const ws = new WebSocket(socketUrl, { headers: { authorization: `Bearer ${apiKey}` }, perMessageDeflate: false, maxPayload: 64 * 1024 * 1024 });
      const events: { type: string; event_id?: string; error?: { code?: string; event_id?: string } }[] = [];
      let closeCode: number | undefined;
      ws.on('message', (data) => events.push(JSON.parse(String(data))));
      ws.on('close', (code) => (closeCode = code));
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('unexpected-response', (_req, res) => reject(new Error(`refused: ${res.statusCode}`)));
      });
      return { ws, events, variant: i % 3, messages: bombMessages(i % 3, i), closeCode: () => closeCode };
    }),
  );
  console.log('ready');
  await go();
  const startedAt = performance.now();
  const results = await Promise.all(
    opened.map(async ({ ws, events, variant, messages, closeCode }) => {
      for (const m of messages) ws.send(m);
      // Its two errors (or its end), then a round trip that says it is still there.
      const until = async (done: () => boolean, ms: number) => {
        const deadline = performance.now() + ms;
        while (!done() && ws.readyState === WebSocket.OPEN && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      };
      const errors = () => events.filter((e) => e.type === 'error');
      await until(() => errors().length >= 2, 120_000);
      if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: 'session.update', session: { type: 'realtime', instructions: 'Still here?' } }));
      await until(() => events.some((e) => e.type === 'session.updated'), 60_000);
      const alive = events.some((e) => e.type === 'session.updated');
      ws.close();
      return { variant, errors: errors().map((e) => ({ code: e.error?.code, eventId: e.error?.event_id })), alive, closeCode: closeCode() };
    }),
  );
  return { sessions: results, seconds: (performance.now() - startedAt) / 1000 };
}

const report =
  mode === 'bad-keys'
    ? await (async () => {
        console.log('ready');
        await go();
        return badKeys(Number(args[0]));
      })()
    : mode === 'bombs'
      ? await bombs(Number(args[0]))
      : await appends(Number(args[0]), Number(args[1]), Number(args[2]));
console.log(JSON.stringify(report));
process.exit(0);
