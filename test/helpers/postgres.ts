// A PostgreSQL cluster of the test's own (initdb into a temporary directory, on a free port), so a
// test can stop and start it without touching the machine's PostgreSQL. Needs the Debian postgresql
// package (scripts/setup.sh --test); runs as the postgres user when the tests run as root.
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './coturn.ts';

const run = promisify(execFile);

export interface TestPostgres {
  /** postgres://postgres@127.0.0.1:PORT/postgres */
  url: string;
  port: number;
  start(): Promise<void>;
  /** A fast shutdown: open connections are terminated, as in a real restart. */
  stop(): Promise<void>;
  destroy(): Promise<void>;
}

function binDir(): string {
  const root = '/usr/lib/postgresql';
  const version = existsSync(root) ? readdirSync(root).sort().reverse().find((v) => existsSync(join(root, v, 'bin', 'initdb'))) : undefined;
  if (!version) throw new Error('PostgreSQL server binaries not found under /usr/lib/postgresql (apt-get install postgresql)');
  return join(root, version, 'bin');
}

/** Runs a PostgreSQL binary, as the postgres user when we are root (initdb and postgres refuse root). */
function asPostgres(binary: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', binary, ...args]] : [binary, args];
}

export async function startTestPostgres(): Promise<TestPostgres> {
  const bin = binDir();
  const dir = mkdtempSync(join(tmpdir(), 'parley-pg-'));
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString());
    chownSync(dir, uid, gid);
  }
  const data = join(dir, 'data');
  const port = await freePort();
  await run(...asPostgres(join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']));
  const pgCtl = (args: string[]) => run(...asPostgres(join(bin, 'pg_ctl'), ['-D', data, ...args]));
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off`;
  const start = async () => void (await pgCtl(['start', '-w', '-l', join(dir, 'log'), '-o', options]));
  const stopNow = () => {
    try {
      execFileSync(...asPostgres(join(bin, 'pg_ctl'), ['-D', data, 'stop', '-m', 'immediate']), { stdio: 'ignore' });
    } catch {
      // not running
    }
  };
  // A test process that dies early must not leave the cluster running.
  process.once('exit', stopNow);
  await start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    start,
    stop: async () => void (await pgCtl(['stop', '-w', '-m', 'fast'])),
    destroy: async () => {
      stopNow();
      process.off('exit', stopNow);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The machine's PostgreSQL (development machines and CI run one on 5432, trust auth). */
export const MACHINE_POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** A database of the test's own on the machine's PostgreSQL, dropped (connections and all) by drop(). */
export async function scratchDatabase(prefix: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: MACHINE_POSTGRES_URL });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  return { url: MACHINE_POSTGRES_URL.replace(/\/[^/]*$/, `/${name}`), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}
