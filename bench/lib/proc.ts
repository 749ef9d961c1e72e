// Process and machine accounting from /proc for the benchmarks, and CPU pinning with taskset.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { childPids } from '../../test/helpers/processes.ts';

const CLOCK_TICKS_PER_SECOND = 100; // USER_HZ on Linux: /proc/<pid>/stat times are in these

/** A process and its descendants (a PARLEY_WORKERS primary and its workers, coturn…), while they live. */
export function processTree(pid: number): number[] {
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) tree.push(...childPids(tree[i]!));
  return tree;
}

/** CPU seconds of a process and its descendants (see processTree). */
export function treeCpuSeconds(pid: number): number {
  return processTree(pid).reduce((sum, p) => {
    try {
      return sum + cpuSeconds(p);
    } catch {
      return sum;
    }
  }, 0);
}

/** CPU seconds (user + system, all threads) a process has used so far. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND; // utime, stime
}

/** Busy and total jiffies of the whole machine (all cores). */
export function machineJiffies(): { busy: number; total: number } {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.split(/\s+/).slice(1).map(Number);
  const total = cpu.reduce((a, b) => a + b, 0);
  const idle = (cpu[3] ?? 0) + (cpu[4] ?? 0);
  return { busy: total - idle, total };
}

/**
 * Seconds the threads of a process and its descendants have spent runnable but waiting for a CPU
 * (the scheduler's run delay, /proc/<pid>/task/<tid>/schedstat): time taken by other work on the
 * same CPUs, or by the process's own other threads when they share them. Threads that ended are not counted.
 */
export function treeRunDelaySeconds(pid: number): number {
  let ns = 0;
  for (const p of processTree(pid)) {
    let tids: string[];
    try {
      tids = readdirSync(`/proc/${p}/task`);
    } catch {
      continue;
    }
    for (const tid of tids) {
      try {
        ns += Number(readFileSync(`/proc/${p}/task/${tid}/schedstat`, 'utf8').split(' ')[1]);
      } catch {
        // the thread ended
      }
    }
  }
  return ns / 1e9;
}

export function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : 0;
}

/** The three load averages, as printed by uptime. */
export function loadAverage(): string {
  return loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
}

/** Pins every thread of a process (and the threads it starts later) to the given CPUs ("0", "1", "0-1"). */
export function pin(pid: number, cpus: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
}

export function percentile(values: number[], p: number): number {
  if (!values.length) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
