// A caller that floods its event channel, in a process of its own so that the test process (which
// watches another caller) is not the one slowed down. It places a call on libdatachannel
// (node-datachannel) with the Orga JSON form or OpenAI's SDP form, waits for session.created,
// prints `ready`, floods on a line from stdin, then checks that its call still answers, and prints
// one JSON line: { sent, errorCodes, alive }.
//
//   node --import tsx test/helpers/floodingCaller.ts <baseUrl> <token> orga|openai <count>
import ndc from 'node-datachannel';

const [baseUrl, token, form, countText] = process.argv.slice(2);
const count = Number(countText);
const orga = form === 'orga';

const events: { type?: string; error?: { code?: string } }[] = [];
const waiters = new Set<() => void>();

/** The first event of `type` from index `from` on (by default generous: a call's setup on a loaded machine is not what is measured). */
function next(type: string, from = 0, timeoutMs = 30_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = () => events.some((e, i) => i >= from && e.type === type);
    if (check()) return resolve();
    const timer = setTimeout(() => reject(new Error(`no ${type} within ${timeoutMs} ms`)), timeoutMs);
    const waiter = () => {
      if (!check()) return;
      clearTimeout(timer);
      waiters.delete(waiter);
      resolve();
    };
    waiters.add(waiter);
  });
}

/** Places the call and waits for session.created. */
async function placeCall(): Promise<{ pc: ndc.PeerConnection; channel: ndc.DataChannel }> {
  const pc = new ndc.PeerConnection('flooder', { iceServers: [], bindAddress: '127.0.0.1' });
  const audio = new ndc.Audio('0', 'SendRecv');
  audio.addOpusCodec(111);
  pc.addTrack(audio);
  const candidates: { candidate: string; sdpMid: string }[] = [];
  pc.onLocalCandidate((candidate, mid) => candidates.push({ candidate, sdpMid: mid }));
  const gathered = new Promise<void>((resolve) => pc.onGatheringStateChange((s) => s === 'complete' && resolve()));
  const channel = pc.createDataChannel(orga ? 'orga-realtime-client-events' : 'oai-events');
  channel.onMessage((msg) => {
    events.push(JSON.parse(typeof msg === 'string' ? msg : Buffer.from(msg as ArrayBuffer).toString('utf8')));
    for (const w of waiters) w();
  });
  try {
    await gathered;
    const offer = pc.localDescription()!.sdp;
    const res = orga
      ? await fetch(`${baseUrl}/v1/realtime/calls`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ offer: { sdp: offer, type: 'offer', candidates }, params: {} }),
        })
      : await fetch(`${baseUrl}/v1/realtime/calls`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/sdp' }, body: offer });
    if (!res.ok) throw new Error(`calls answered ${res.status}: ${await res.text()}`);
    pc.setRemoteDescription(orga ? ((await res.json()) as { answer: { sdp: string } }).answer.sdp : await res.text(), 'answer');
    await next('session.created', events.length, 15_000);
    return { pc, channel };
  } catch (err) {
    pc.close();
    throw err;
  }
}

// libdatachannel as an offerer now and then fails its own set-up under load ("Got a remote candidate
// without ICE transport", or a channel that never opens); the flood is what is under test, so the
// set-up is tried again.
let placed: Awaited<ReturnType<typeof placeCall>> | undefined;
for (let attempt = 1; !placed; attempt++) {
  try {
    placed = await placeCall();
  } catch (err) {
    if (attempt === 3) throw err;
    process.stderr.write(`flooding caller: set-up attempt ${attempt} failed (${(err as Error).message}); trying again\n`);
  }
}
const { pc, channel } = placed;
// Ready: the flood starts when the test says so (a line on stdin), so its watch measures the flood,
// not this process's start.
process.stdout.write('ready\n');
await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()));

const say = (text: string) =>
  channel.sendMessage(JSON.stringify({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text }] } }));
if (!orga) say('What time is it?');
let sent = 0;
while (sent < count) {
  // 5,000 events a second, a hundred times what a call may send: 250 every 50 ms.
  for (const end = Math.min(count, sent + 250); sent < end; sent++) {
    if (orga) say(`What time is it? (${sent})`);
    else {
      channel.sendMessage(JSON.stringify({ type: 'response.cancel' }));
      channel.sendMessage(JSON.stringify({ type: 'response.create' }));
    }
  }
  await new Promise((r) => setTimeout(r, 50));
}

// The call goes on: a later event is answered (once the client's rate allows it again).
let alive = false;
for (let attempt = 0; attempt < 20 && !alive; attempt++) {
  const from = events.length;
  channel.sendMessage(JSON.stringify(orga ? { event: 'session.update', data: { temperature: 0.6 } } : { type: 'session.update', session: { type: 'realtime', instructions: 'Be brief.' } }));
  alive = await next('session.updated', from, 500).then(() => true, () => false);
}
const errorCodes = [...new Set(events.filter((e) => e.type === 'error').map((e) => e.error?.code))];
process.stdout.write(JSON.stringify({ sent, errorCodes, alive }) + '\n');
pc.close();
process.exit(0);
