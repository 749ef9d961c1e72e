// Why SIP under PARLEY_WORKERS is routed by Call-ID rather than shared with reusePort (issue 37):
// two processes bind one UDP port with `reusePort` (Node >= 22.12; not in Node 20), and the script
// counts where the kernel delivers datagrams: those of one source address and port (a trunk), one
// from each of 200 sources (phones), and the answers of 200 peers to requests the first process sent
// (as a REGISTER or an outbound INVITE would be answered).
//
//   test-artifacts/node-lts/bin/node --import tsx bench/sip-reuseport.ts [--datagrams 500]
// (Node 24 as scripts/setup.sh --test fetches it; under Node 20 the bind fails: no reusePort.)
import { fork, type ChildProcess } from 'node:child_process';
import { createSocket, type Socket } from 'node:dgram';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';

type FromParent = { sendTo: number } | { report: true };
type FromChild = { ready: true } | { failed: string } | { counted: number };

if (process.argv[2] === 'child') {
  const port = Number(process.argv[3]);
  let counted = 0;
  const socket = createSocket({ type: 'udp4', reusePort: true } as Parameters<typeof createSocket>[0]);
  socket.on('message', () => counted++);
  socket.on('error', (err) => process.send!({ failed: err.message } satisfies FromChild, () => process.exit(1)));
  process.on('message', (m: FromParent) => {
    if ('sendTo' in m) socket.send('request', m.sendTo, '127.0.0.1');
    else {
      process.send!({ counted } satisfies FromChild);
      counted = 0;
    }
  });
  socket.bind({ port, address: '127.0.0.1', exclusive: true }, () => process.send!({ ready: true } satisfies FromChild));
} else {
  const { values } = parseArgs({ options: { datagrams: { type: 'string', default: '500' } } });
  const port = 40_000 + Math.floor(Math.random() * 20_000);
  const children = [0, 1].map(() => fork(import.meta.filename, ['child', String(port)], { execArgv: process.execArgv }));
  const started = await Promise.all(children.map((c) => new Promise<FromChild>((resolve) => c.once('message', resolve))));
  const failed = started.find((m) => 'failed' in m);
  if (failed) {
    console.log(`the second process could not bind the port (${failed.failed}): reusePort needs Node >= 22.12, this is ${process.version}`);
    for (const c of children) c.kill();
    process.exit(1);
  }
  const counts = async (c: ChildProcess) =>
    new Promise<number>((resolve) => {
      c.once('message', (m: FromChild) => 'counted' in m && resolve(m.counted));
      c.send({ report: true } satisfies FromParent);
    });
  const report = async (what: string) => {
    await sleep(300);
    console.log(`${what}: ${(await Promise.all(children.map(counts))).join(' / ')} (first process / second)`);
  };
  const bound = async (): Promise<Socket> => {
    const s = createSocket('udp4');
    await new Promise<void>((resolve) => s.bind(0, '127.0.0.1', resolve));
    return s;
  };

  console.log(`bench/sip-reuseport.ts, node ${process.version}`);
  const trunk = await bound();
  for (let i = 0; i < Number(values.datagrams); i++) {
    trunk.send('datagram', port, '127.0.0.1');
    if (i % 50 === 49) await sleep(5);
  }
  await report(`${values.datagrams} datagrams from one source address and port (a trunk)`);
  const phones = await Promise.all(Array.from({ length: 200 }, bound));
  for (const p of phones) p.send('datagram', port, '127.0.0.1');
  await report('one datagram from each of 200 sources (phones)');
  for (const p of phones) p.once('message', () => p.send('answer', port, '127.0.0.1'));
  for (const p of phones) children[0]!.send({ sendTo: p.address().port } satisfies FromParent);
  await report('answers of 200 peers to a request the first process sent them');
  for (const s of [trunk, ...phones]) s.close();
  for (const c of children) c.kill();
}
