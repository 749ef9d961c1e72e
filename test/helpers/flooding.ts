// Floods from a caller in a process of its own (floodingCaller.ts) while another caller, the
// bystander, is watched: its data-channel round trip, its echoed audio, the node's /healthz and its
// speech processes. Shared by test/flood.test.ts and bench/probes.ts.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { childPids } from './processes.ts';
import { inboundAudio, type RtcClient } from './rtcClient.ts';
import { http, type RunningServer } from './server.ts';

const FLOODING_CALLER = join(import.meta.dirname, 'floodingCaller.ts');

/** The server's synthesis processes now (its engine host's children, or its own). */
export function speechProcesses(server: RunningServer): number {
  const server_ = server.proc.pid!;
  return [server_, ...childPids(server_)].flatMap(childPids).filter((pid) => {
    try {
      return /^(flite|espeak-ng)$/.test(readFileSync(`/proc/${pid}/comm`, 'utf8').trim());
    } catch {
      return false; // it ended
    }
  }).length;
}

export interface FloodReport {
  sent: number;
  errorCodes: string[];
  alive: boolean;
}

/**
 * The flooding caller (test/helpers/floodingCaller.ts), in a process of its own, once its call is up;
 * `go()` starts the flood and resolves with its report.
 */
export async function floodingCaller(server: RunningServer, token: string, form: 'orga' | 'openai', count: number): Promise<{ go: () => Promise<FloodReport> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', FLOODING_CALLER, server.baseUrl, token, form, String(count)], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  const lines = new Set<() => void>();
  child.stdout.on('data', (d) => {
    out += d;
    for (const l of lines) l();
  });
  const line = (match: RegExp) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const m = match.exec(out);
        if (m) resolve(m[0]);
      };
      lines.add(check);
      check();
      void exited.then((code) => reject(new Error(`the flooding caller exited with ${code}: ${err}`)));
    });
  await line(/^ready$/m);
  return {
    go: async () => {
      child.stdin.write('go\n');
      const report = JSON.parse(await line(/^\{.*\}$/m)) as FloodReport;
      await exited;
      return report;
    },
  };
}

export interface Observed {
  maxSpeechProcesses: number;
  maxRoundTripMs: number;
  maxHealthzMs: number;
  audioPacketsPerSecond: number;
}

/**
 * Runs `attack` while watching, until it is over and `watchMs` have passed: the server's speech processes,
 * a bystander's data-channel round trip (session.update → session.updated) and its echoed audio,
 * and /healthz.
 */
export async function underAttack<T>(server: RunningServer, bystander: RtcClient, attack: () => Promise<T>, watchMs = 2000): Promise<Observed & { attack: T }> {
  let maxSpeechProcesses = 0;
  const sampler = setInterval(() => (maxSpeechProcesses = Math.max(maxSpeechProcesses, speechProcesses(server))), 20);
  const startAudio = await inboundAudio(bystander);
  const startedAt = performance.now();
  let attackOver = false;
  const attacking = attack().finally(() => (attackOver = true));
  let maxRoundTripMs = 0;
  let maxHealthzMs = 0;
  try {
    for (let i = 0; !attackOver || performance.now() - startedAt < watchMs; i++) {
      const from = bystander.events.length;
      let t = performance.now();
      bystander.send({ event: 'session.update', data: { temperature: 0.5 + (i % 2) / 10 } });
      await bystander.nextEvent('session.updated', 10_000, from);
      maxRoundTripMs = Math.max(maxRoundTripMs, performance.now() - t);
      t = performance.now();
      const health = await http(server.baseUrl, '/healthz');
      if (health.status !== 200) throw new Error(`/healthz answered ${health.status}`);
      maxHealthzMs = Math.max(maxHealthzMs, performance.now() - t);
      // A probe every 50 ms: the bystander stays well within its own event rate.
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    clearInterval(sampler);
  }
  const attackReport = await attacking;
  // The rate over the stats' own timestamps (when libwebrtc counted), not over when the awaits returned.
  const endAudio = await inboundAudio(bystander);
  const seconds = (endAudio.timestamp! - startAudio.timestamp!) / 1000;
  const audioPacketsPerSecond = (endAudio.packetsReceived - startAudio.packetsReceived) / seconds;
  return { maxSpeechProcesses, maxRoundTripMs, maxHealthzMs, audioPacketsPerSecond, attack: attackReport };
}
