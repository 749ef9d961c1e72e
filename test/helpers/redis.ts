// A Redis of the test's own (redis-server on a free port, nothing saved), so a test can stop and
// start it without touching the machine's Redis.
import { spawn, type ChildProcess } from 'node:child_process';
import { createConnection } from 'node:net';
import { freePort } from './coturn.ts';
import { until } from './wait.ts';

export interface TestRedis {
  url: string;
  start(): Promise<void>;
  stop(): Promise<void>;
}

function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port }, () => socket.write('PING\r\n'));
    socket.once('data', (d) => {
      socket.destroy();
      resolve(d.toString().startsWith('+PONG'));
    });
    socket.once('error', () => resolve(false));
  });
}

export async function startTestRedis(): Promise<TestRedis> {
  const port = await freePort();
  let proc: ChildProcess | undefined;
  const kill = () => proc?.kill('SIGKILL');
  process.once('exit', kill);
  const start = async () => {
    proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    await until('redis to answer', () => answersPing(port), (ok) => ok, 10_000);
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    start,
    stop: async () => {
      const exited = new Promise((r) => proc!.once('exit', r));
      proc!.kill('SIGTERM');
      await exited;
      proc = undefined;
    },
  };
}
