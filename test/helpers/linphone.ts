// Debian's linphonec (linphone-cli) as a second real SIP user agent beside baresip: headless (no
// sound card: it still signals), its SIP port picked for it, commands typed on its standard input,
// its output line-buffered (stdbuf: into a pipe, stdio would hold its messages back),
// its state messages (-S) and its log with the SIP trace (-d 6) on stdout.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from './baresip.ts';
import { until } from './wait.ts';

export interface Linphone {
  proc: ChildProcess;
  out: () => string;
  /** Types a linphonec command (`register …`, `call …`, `terminate`…). */
  command: (line: string) => void;
  stop: () => Promise<void>;
}

/**
 * Starts linphonec in `dir` (its HOME: its database goes there), listening for SIP on loopback UDP;
 * the registrations it makes ask for `regExpires` seconds (its default: an hour).
 */
export async function startLinphone(dir: string, opts: { regExpires?: number } = {}): Promise<Linphone> {
  // Without its database folder it never brings its SIP transports up.
  mkdirSync(join(dir, '.local/share/linphone'), { recursive: true });
  const sipPort = await freePort();
  const rc = join(dir, 'linphonerc');
  const expires = opts.regExpires ? ['[proxy_default_values]', `reg_expires=${opts.regExpires}`] : [];
  writeFileSync(rc, ['[sip]', `sip_port=${sipPort}`, 'sip_tcp_port=0', 'sip_tls_port=0', 'ipv6_enabled=0', '[misc]', 'enable_chat=0', ...expires, ''].join('\n'));
  const proc = spawn('stdbuf', ['-oL', 'linphonec', '-c', rc, '-S', '-d', '6'], { env: { ...process.env, HOME: dir }, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<void>((resolve) => proc.on('exit', () => resolve()));
  await until('linphonec ready', () => out, (o) => o.includes('linphonec>'), 30_000);
  return {
    proc,
    out: () => out,
    command: (line) => void proc.stdin!.write(`${line}\n`),
    stop: async () => {
      if (proc.exitCode === null) {
        proc.stdin!.end('quit\n');
        setTimeout(() => proc.exitCode === null && proc.kill('SIGKILL'), 5000).unref();
      }
      await exited;
    },
  };
}
