// One tenant floods the node's picture decoder while another sends an ordinary picture (issue 44
// item 6): key A's sessions each send a PNG "bomb" (8000 × 8000 pixels of one colour: ≈ 190 KB of
// file, 192 MB once decoded) as an input_image, then key B's session sends a 17 KB JPEG with a
// question. Watched meanwhile: /healthz, the node's RSS and its ffmpeg processes (their number and
// RSS). Shared by test/picture-floods.test.ts and bench/picture-floods.ts.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { childPids } from './processes.ts';
import { realtimeSession, type RealtimeSession } from './realtimeSession.ts';
import { http, type RunningServer } from './server.ts';
import { until } from './wait.ts';

const ffmpeg = (args: string[]) => execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', ...args, '-f', 'image2pipe', 'pipe:1'], { maxBuffer: 1 << 24 });

/** A PNG of `side` × `side` pixels of one colour: tiny as a file, huge decoded (the most ffmpeg decodes is 8192²). */
export const pngBomb = (side = 8000) => ffmpeg(['-f', 'lavfi', '-i', `color=red:s=${side}x${side}`, '-frames:v', '1', '-c:v', 'png', '-pix_fmt', 'rgb24', '-compression_level', '9']);
/** An ordinary photo-sized JPEG, mostly blue (≈ 17 KB). */
export const ordinaryJpeg = () => ffmpeg(['-f', 'lavfi', '-i', 'color=blue:s=400x300,noise=alls=13:allf=t', '-frames:v', '1', '-c:v', 'mjpeg', '-q:v', '5']);

export const imageItem = (mime: string, bytes: Buffer, text?: string) => ({
  type: 'message',
  role: 'user',
  content: [...(text ? [{ type: 'input_text', text }] : []), { type: 'input_image', image_url: `data:${mime};base64,${bytes.toString('base64')}` }],
});

/** What a session's picture came to: its item added, or the error's type and code. */
export type Outcome = 'added' | `${string}/${string}`;

/** The outcome of the picture a session sent as event `eventId`, once there is one. */
export function outcomeOf(s: RealtimeSession, eventId: string): Outcome | undefined {
  const error = s.events.find((e) => e.type === 'error' && e.error.event_id === eventId);
  if (error) return `${error.error.type}/${error.error.code}`;
  return s.events.some((e) => e.type === 'conversation.item.added' && e.item.content?.some((c: { type: string }) => c.type === 'input_image')) ? 'added' : undefined;
}

export interface PictureFloodReport {
  /** Each bomb's outcome, once all have one. */
  attacker: Outcome[];
  /** The ordinary picture's outcome, how long it took, and the reply to its question. */
  victim: { outcome: Outcome; ms: number; reply: string };
  /** /healthz answers other than 200, and its slowest answer. */
  healthzFailures: number;
  maxHealthzMs: number;
  /** The node's RSS before and at its highest, and its ffmpeg processes' (together) at their highest, MB. */
  nodeRssMb: { before: number; peak: number };
  ffmpegRssPeakMb: number;
  /** ffmpeg processes at once, at most. */
  maxDecoders: number;
}

const rssMb = (pid: number) => {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
  } catch {
    return 0; // it ended
  }
};
const isFfmpeg = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'ffmpeg';
  } catch {
    return false;
  }
};

/**
 * Runs the flood: `attackerKey`'s `bombs` sessions each send one bomb at once; once `beforeVictim`
 * resolves, `victimKey`'s session sends the ordinary JPEG and asks what it shows. Resolves when
 * every picture has its outcome and the victim its reply.
 */
export async function pictureFlood(
  server: Pick<RunningServer, 'baseUrl' | 'proc'>,
  opts: { attackerKey: string; victimKey: string; bombs: number; beforeVictim: (attacker: RealtimeSession[]) => Promise<void>; timeoutMs?: number },
): Promise<PictureFloodReport> {
  const timeoutMs = opts.timeoutMs ?? 180_000;
  const bomb = pngBomb();
  const jpeg = ordinaryJpeg();
  const attacker: RealtimeSession[] = [];
  for (let i = 0; i < opts.bombs; i++) attacker.push(await realtimeSession({ baseUrl: server.baseUrl, devKey: opts.attackerKey }, []));
  const victim = await realtimeSession({ baseUrl: server.baseUrl, devKey: opts.victimKey }, []);
  const pid = server.proc.pid!;
  const report = { healthzFailures: 0, maxHealthzMs: 0, nodeRssMb: { before: rssMb(pid), peak: 0 }, ffmpegRssPeakMb: 0, maxDecoders: 0 };
  const sampler = setInterval(() => {
    report.nodeRssMb.peak = Math.max(report.nodeRssMb.peak, rssMb(pid));
    const decoders = childPids(pid).filter(isFfmpeg);
    report.maxDecoders = Math.max(report.maxDecoders, decoders.length);
    report.ffmpegRssPeakMb = Math.max(report.ffmpegRssPeakMb, decoders.reduce((sum, p) => sum + rssMb(p), 0));
  }, 50);
  let watching = true;
  const healthz = (async () => {
    while (watching) {
      const t = performance.now();
      const health = await http(server.baseUrl, '/healthz').catch(() => ({ status: 0 }));
      if (health.status !== 200) report.healthzFailures++;
      report.maxHealthzMs = Math.max(report.maxHealthzMs, performance.now() - t);
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  try {
    attacker.forEach((s, i) => s.send({ type: 'conversation.item.create', event_id: `bomb-${i}`, item: imageItem('image/png', bomb) }));
    await opts.beforeVictim(attacker);
    const sentAt = performance.now();
    victim.send({ type: 'conversation.item.create', event_id: 'photo', item: imageItem('image/jpeg', jpeg, 'What colour is this?') });
    victim.send({ type: 'response.create' });
    const outcome = await until('the photo taken or refused', () => outcomeOf(victim, 'photo'), (o) => o !== undefined, timeoutMs);
    const ms = performance.now() - sentAt;
    const done = outcome === 'added' ? await until('the reply to the photo', () => victim.replies()[0], (d) => d !== undefined, timeoutMs) : undefined;
    const bombs = await until('every bomb taken or refused', () => attacker.map((s, i) => outcomeOf(s, `bomb-${i}`)), (os) => os.every((o) => o !== undefined), timeoutMs);
    return { ...report, nodeRssMb: { before: Math.round(report.nodeRssMb.before), peak: Math.round(report.nodeRssMb.peak) }, attacker: bombs as Outcome[], victim: { outcome: outcome!, ms, reply: done ? victim.text(done) : '' } };
  } finally {
    watching = false;
    clearInterval(sampler);
    await healthz;
    for (const s of [...attacker, victim]) s.close();
  }
}
