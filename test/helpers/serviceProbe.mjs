// Preloaded into a process (node --import) to see whether it starts any part of the service: it
// notes, one line each in the file PARLEY_PROBE_FILE, every process spawned (coturn, speech
// engines), worker thread started, port bound (HTTP, STUN, SIP) and module of the service loaded.
import childProcess from 'node:child_process';
import dgram from 'node:dgram';
import { appendFileSync } from 'node:fs';
import { register, syncBuiltinESMExports } from 'node:module';
import net from 'node:net';
import workerThreads from 'node:worker_threads';

const file = process.env.PARLEY_PROBE_FILE;
if (!file) throw new Error('serviceProbe: set PARLEY_PROBE_FILE');
const note = (line) => appendFileSync(file, `${line}\n`);

for (const name of ['spawn', 'spawnSync', 'fork', 'exec', 'execSync', 'execFile', 'execFileSync']) {
  const original = childProcess[name];
  childProcess[name] = function (...args) {
    note(`${name} ${args[0]}`);
    return original.apply(this, args);
  };
}
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  note('listen');
  return listen.apply(this, args);
};
const bind = dgram.Socket.prototype.bind;
dgram.Socket.prototype.bind = function (...args) {
  note('bind udp');
  return bind.apply(this, args);
};
const { Worker } = workerThreads;
workerThreads.Worker = class extends Worker {
  constructor(...args) {
    note(`worker ${args[0]}`);
    super(...args);
  }
};
// ES module imports of node:child_process etc. see the replacements only after this.
syncBuiltinESMExports();

// The service's wiring, by its file (sources or build): what loads the speech engines and WebRTC stacks.
register(
  `data:text/javascript,${encodeURIComponent(`
    import { appendFileSync } from 'node:fs';
    export async function load(url, context, next) {
      if (/\\/(src|dist)\\/(services|server)\\.(ts|js)$/.test(url)) appendFileSync(${JSON.stringify(file)}, 'load ' + url + '\\n');
      return next(url, context);
    }
  `)}`,
);
