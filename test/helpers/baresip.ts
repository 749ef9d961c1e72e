// Debian's baresip as a SIP caller, configured as the docs' recipe (examples/baresip/config):
// headless, its microphone a WAV file (aufile), what it hears dumped to WAV files (sndfile); here
// also commands over its ctrl_tcp socket (netstring JSON), and its SIP trace (-s) on stdout.
import { spawn, type ChildProcess } from 'node:child_process';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { until } from './wait.ts';

/** A port free on loopback for TCP (and, as the OS hands them out, very likely UDP too). */
export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** baresip did not start (its output says why: a sip_listen port taken, most often). */
export class BaresipStartError extends Error {
  constructor(readonly output: string) {
    super(`baresip did not start:\n${output}`);
  }
  get portTaken(): boolean {
    return /Address already in use/.test(this.output);
  }
}

export interface Baresip {
  proc: ChildProcess;
  /** Its stdout so far (the SIP trace and its status lines). */
  out: () => string;
  /** Runs a command (`dial`, `hangup`, `sndcode`…) through ctrl_tcp. */
  command: (command: string, params?: string) => Promise<void>;
  /** The WAV files of what it heard (decoded audio), once written. */
  heard: () => string[];
  stop: () => Promise<void>;
}

/**
 * The recipe the docs show (examples/baresip/config: headless, a WAV file for a microphone, what it
 * hears to WAV files), each line that starts with a key of `lines` replaced by its value; every key
 * must be there, so the recipe and the tests cannot drift apart unseen.
 */
function recipeConfig(lines: Record<string, string>): string {
  const recipe = readFileSync(new URL('../../examples/baresip/config', import.meta.url), 'utf8')
    .split('\n')
    .filter((line) => line.trim() && !line.startsWith('#'));
  const out = recipe.map((line) => Object.entries(lines).find(([key]) => line.startsWith(key))?.[1] ?? line);
  for (const key of Object.keys(lines)) assert.ok(recipe.some((line) => line.startsWith(key)), `examples/baresip/config has no "${key}" line`);
  return out.join('\n') + '\n';
}

/**
 * Starts baresip in `dir` as `user` (with `password` for digest), speaking `wav` (16-bit, at the
 * codec's rate: 8 kHz mono for G.711, 48 kHz for Opus — aufile does not resample); when the file
 * ends, baresip hangs up. It offers G.711 only, or Opus only (`codec: 'opus'`).
 */
export async function startBaresip(
  dir: string,
  opts: { user: string; password?: string; wav: string; codec?: 'g711' | 'opus'; srtp?: boolean; registrar?: number; regint?: number; listenPort?: number; answerMode?: 'auto' | 'manual' },
): Promise<Baresip> {
  mkdirSync(dir, { recursive: true });
  const ctrlPort = await freePort();
  writeFileSync(
    join(dir, 'config'),
    recipeConfig({
      'audio_source aufile,': `audio_source aufile,${opts.wav}`,
      'module g711.so': opts.codec === 'opus' ? 'module opus.so' : 'module g711.so',
      'snd_path ': `snd_path ${dir}`,
      ...(opts.listenPort ? { 'sip_listen ': `sip_listen 127.0.0.1:${opts.listenPort}` } : {}),
    }) +
      [...(opts.srtp ? ['module srtp.so'] : []), 'net_interface 127.0.0.1', 'module_app ctrl_tcp.so', `ctrl_tcp_listen 127.0.0.1:${ctrlPort}`, ''].join('\n'),
  );
  // srtp-mand: RTP/SAVP with SDES keys, and no call without them.
  // With `registrar` (Parley's SIP port) it registers there, for `regint` seconds (10 minutes unless
  // given), refreshing before they are over; else it never registers.
  const aor = opts.registrar ? `<sip:${opts.user}@127.0.0.1:${opts.registrar}>;regint=${opts.regint ?? 600}` : `<sip:${opts.user}@127.0.0.1>;regint=0`;
  // answermode=auto: it answers calls to it at once; manual: they ring until a command answers or refuses them.
  writeFileSync(join(dir, 'accounts'), `${aor}${opts.password ? `;auth_pass=${opts.password}` : ''}${opts.srtp ? ';mediaenc=srtp-mand' : ''}${opts.answerMode ? `;answermode=${opts.answerMode}` : ''}\n`);
  const proc = spawn('baresip', ['-f', dir, '-s'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<void>((resolve) => proc.on('exit', () => resolve()));
  // Ready, or gone (a port of sip_listen taken meanwhile: it cannot start).
  await until('baresip ready', () => out, (o) => o.includes('baresip is ready') || proc.exitCode !== null || /init failed|Address already in use/.test(o), 30_000);
  if (!out.includes('baresip is ready')) {
    proc.kill('SIGKILL');
    await exited;
    throw new BaresipStartError(out);
  }
  return {
    proc,
    out: () => out,
    command: (command, params = '') =>
      new Promise((resolve, reject) => {
        const json = JSON.stringify({ command, params, token: 'test' });
        const socket = connect(ctrlPort, '127.0.0.1', () => socket.write(`${Buffer.byteLength(json)}:${json},`));
        let answer = '';
        socket.on('data', (d) => {
          answer += d;
          // Its answer names our token: the command ran.
          if (answer.includes('"token":"test"')) {
            socket.end();
            resolve();
          }
        });
        socket.on('error', reject);
      }),
    heard: () =>
      readdirSync(dir)
        .filter((f) => f.startsWith('dump-') && f.endsWith('-dec.wav'))
        .map((f) => join(dir, f)),
    stop: async () => {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      await exited;
    },
  };
}
