// A caller for voice benchmarks: a libwebrtc client in a call that speaks PCM into the call and
// hears the agent, timing each turn from the end of its speech to the agent's first loud audio.
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import wrtc from '@roamhq/wrtc';
import { openCall, type RtcClient } from '../../test/helpers/rtcClient.ts';
import { mintToken, type RunningServer } from '../../test/helpers/server.ts';
import { attachRoomMicrophone, type RoomOptions } from '../../test/helpers/room.ts';

export const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
export const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** User + system CPU seconds a process has used so far. */
export function cpuSeconds(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

export interface TurnResult {
  voiceToVoiceMs: number;
  timings: Record<string, number>;
}

export interface Talker {
  client: RtcClient;
  mic: { say(pcm: Int16Array): Promise<void>; stop(): void };
  /** Times (performance.now) at which loud agent audio arrived, since the last reset. */
  loudTimes: number[];
  /** Says the question; `speechEnd`: the sample its speech ends at (else where the clip is last loud). */
  turn(question: Int16Array, speechEnd?: number): Promise<TurnResult | undefined>;
  close(): void;
}

/** `room`: the caller's microphone hears that room (noise, the agent's echo); default a quiet one. */
export async function openTalker(server: RunningServer, model: string, room: RoomOptions = {}): Promise<Talker> {
  const token = await mintToken(server.baseUrl, server.devKey);
  const client = await openCall(server.baseUrl, token, { params: { model } });
  await client.waitConnected();
  await client.nextEvent('session.created');
  const mic = await attachRoomMicrophone(client, room);
  const transceiver = client.pc.getTransceivers().find((t: any) => t.receiver.track.kind === 'audio');
  const sink = new (wrtc as any).nonstandard.RTCAudioSink(transceiver.receiver.track);
  const loudTimes: number[] = [];
  let firstLoudAt: number | undefined;
  let listeningSince = Infinity;
  sink.ondata = (d: { samples: Int16Array }) => {
    let sum = 0;
    for (const s of d.samples) sum += s * s;
    if (Math.sqrt(sum / d.samples.length) <= 300) return;
    const now = performance.now();
    loudTimes.push(now);
    if (firstLoudAt === undefined && now >= listeningSince) firstLoudAt = now;
  };
  await sleep(500);
  return {
    client,
    mic,
    loudTimes,
    async turn(question, speechEnd) {
      const from = client.events.length;
      firstLoudAt = undefined;
      await mic.say(question);
      // The clip ends in silence: the caller's speech ended where it was last loud.
      let tail = question.length;
      if (speechEnd !== undefined) tail = speechEnd;
      else while (tail > 0 && Math.abs(question[tail - 1]!) < 500) tail--;
      const speechEnded = performance.now() - (question.length - tail) / 48;
      listeningSince = speechEnded;
      const deadline = Date.now() + 15_000;
      while (firstLoudAt === undefined && Date.now() < deadline) await sleep(5);
      const started = client.events.slice(from).find((e) => e.type === 'response.audio.started');
      const result = firstLoudAt !== undefined && started ? { voiceToVoiceMs: firstLoudAt - speechEnded, timings: started.timings ?? {} } : undefined;
      // Let the reply finish before the next question.
      while (!client.events.slice(from).some((e) => e.type === 'response.audio.done') && Date.now() < deadline + 15_000) await sleep(20);
      await sleep(300);
      listeningSince = Infinity;
      return result;
    },
    close() {
      sink.stop();
      mic.stop();
      client.close();
    },
  };
}
