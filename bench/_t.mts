import { EchoGuard } from '../src/agent/turn/echoGuard.ts';
import { FakeAudioOut } from '../test/helpers/agentFakes.ts';
import { rms } from '../test/helpers/pcm.ts';
import { speak } from '../test/helpers/speech.ts';
const reply = speak('Here is a rather long answer to your question, with several clauses in it, so that it takes a while to say.');
const caller = speak('stop please stop', 16_000);
const out = new FakeAudioOut(); const guard = new EchoGuard(); guard.watch(out).write(reply);
const line: string[] = [];
for (let t = 0; t < 4000; t += 20) {
  out.play(20);
  const frame = new Int16Array(320); let c = 0;
  for (let i = 0; i < 320; i++) { const at48 = Math.round((t - 80) * 48 + i * 3); const echo = at48 >= 0 && at48 < reply.length ? reply[at48]! * 0.316 : 0; const w = caller[(t - 1500) * 16 + i] ?? 0; frame[i] = Math.round(echo + w); }
  const cw = t >= 1500 ? rms(caller.subarray((t - 1500) * 16, (t - 1500) * 16 + 320)) : 0;
  const g = guard.filter(frame);
  if (t >= 1400 && t < 1500 + caller.length / 16) line.push(`${t}:${cw.toFixed(0)}/${rms(frame).toFixed(0)}/${rms(g).toFixed(0)}`);
}
console.log(line.join(' ')); console.log(guard.stats());
