// Parley's own coturn: Debian's turnserver as a supervised child process, with the configuration
// `parley turn config` generates plus its runtime files in one directory (DATA_DIR/coturn). Restarted
// with backoff when it dies, stopped with Parley; a coturn left behind by a Parley that was killed
// (its pid is kept in the directory) is stopped before a new one starts.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BaseLogger } from 'pino';
import { onPath } from '../system/commands.js';

export type Log = Pick<BaseLogger, 'debug' | 'info' | 'warn'>;

export interface CoturnProcessOptions {
  /** turnserver.conf without runtime lines (from coturnConfig()). */
  config: string;
  /** Directory for the config file (it holds the TURN secrets: mode 0600), pid files and coturn's user database. */
  dir: string;
  log: Log;
  /** coturn was (re)started: it answers once it has opened its ports. */
  onStarted(): void;
  /** coturn stopped without being asked to (it is restarted unless it cannot run at all). */
  onExited(reason: string): void;
}

const BACKOFF_MS = [1000, 2000, 4000, 8000, 16000, 30000];
/** A coturn that ran this long before dying starts the backoff afresh. */
const STABLE_MS = 60_000;
const LOG_TAIL_LINES = 20;

export class CoturnProcess {
  private child: ChildProcess | undefined;
  private stopping = false;
  private failures = 0;
  private restartTimer: NodeJS.Timeout | undefined;
  private readonly logTail: string[] = [];
  private readonly configFile: string;
  private readonly pidFile: string;
  /** Whatever happens to Parley, its coturn does not outlive it. */
  private readonly killOnExit = () => this.child?.kill('SIGKILL');

  constructor(private readonly opts: CoturnProcessOptions) {
    this.configFile = join(opts.dir, 'turnserver.conf');
    this.pidFile = join(opts.dir, 'coturn.pid');
  }

  /** The running coturn's process id. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  async start(): Promise<void> {
    mkdirSync(this.opts.dir, { recursive: true, mode: 0o700 });
    await this.stopLeftover();
    const runtime = [
      '',
      '# Runtime files of the coturn Parley runs.',
      `pidfile=${join(this.opts.dir, 'turnserver.pid')}`,
      `userdb=${join(this.opts.dir, 'turndb')}`,
      'log-file=stdout',
      'simple-log',
    ];
    writeFileSync(this.configFile, this.opts.config + runtime.join('\n') + '\n', { mode: 0o600 });
    process.on('exit', this.killOnExit);
    this.launch();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    process.off('exit', this.killOnExit);
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
    await gone;
    clearTimeout(timer);
  }

  private launch(): void {
    const startedAt = Date.now();
    if (!onPath('turnserver')) {
      this.opts.log.warn('turnserver (Debian package coturn) is not installed: no TURN server; run scripts/setup.sh --runtime');
      this.opts.onExited('turnserver is not installed');
      return;
    }
    // setpriv (util-linux) has the kernel stop coturn when Parley dies, even by SIGKILL; it then
    // becomes turnserver itself (same pid).
    const [cmd, args] = onPath('setpriv')
      ? ['setpriv', ['--pdeathsig', 'TERM', '--', 'turnserver', '-c', this.configFile]]
      : ['turnserver', ['-c', this.configFile]];
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    const onOutput = (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n')) {
        if (!line.trim()) continue;
        this.logTail.push(line);
        if (this.logTail.length > LOG_TAIL_LINES) this.logTail.shift();
        this.opts.log.debug({ coturn: line }, 'coturn');
      }
    };
    child.stdout!.on('data', onOutput);
    child.stderr!.on('data', onOutput);
    child.once('spawn', () => {
      if (child.pid) writeFileSync(this.pidFile, `${child.pid}\n`);
      this.opts.log.info({ pid: child.pid }, 'coturn started');
      this.opts.onStarted();
    });
    child.once('error', (err) => this.opts.log.warn({ err: err.message }, 'coturn could not be started'));
    child.once('exit', (code, signal) => {
      if (this.child === child) this.child = undefined;
      if (this.stopping || !child.pid) return;
      if (Date.now() - startedAt >= STABLE_MS) this.failures = 0;
      const delay = BACKOFF_MS[Math.min(this.failures++, BACKOFF_MS.length - 1)]!;
      const reason = signal ? `killed by ${signal}` : `exited with ${code}`;
      this.opts.log.warn({ reason, restartInMs: delay, lastLines: this.logTail.slice(-3) }, 'coturn stopped; restarting it');
      this.opts.onExited(reason);
      this.restartTimer = setTimeout(() => this.launch(), delay);
      this.restartTimer.unref();
    });
  }

  /** Stops the coturn a previous Parley with this directory left running (killed before it could stop it). */
  private async stopLeftover(): Promise<void> {
    if (!existsSync(this.pidFile)) return;
    const pid = Number(readFileSync(this.pidFile, 'utf8').trim());
    const cmdline = (): string => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      } catch {
        return '';
      }
    };
    if (!pid || !(cmdline().includes('turnserver') && cmdline().includes(this.configFile))) return;
    this.opts.log.warn({ pid }, 'stopping the coturn a previous run left behind');
    process.kill(pid, 'SIGKILL');
    for (let i = 0; i < 40 && cmdline(); i++) await sleep(50);
  }
}
