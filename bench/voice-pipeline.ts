// The voice agent alone, in-process (no WebRTC, no Opus): a spoken question synthesised with flite
// is fed to the agent the registry picks for the model as real-time 20 ms frames through a fake
// AgentContext, whose audio queue drains at 20 ms per frame like a call's. Prints each turn's
// transcript, reply and time to first audio with the stage breakdown, then barge-in times and the
// CPU the pipeline used (the recogniser's worker processes and the synthesisers included).
// Usage: node --import tsx bench/voice-pipeline.ts [--turns 10] [--model parley-offline|echo]
//        [--voice Victoria] [--question "what time is it"] [--barge-ins 5]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { frameConverter, resampleTo48k } from '../src/media/audio/resample.ts';
import { readWav } from '../src/media/audio/wav.ts';
import { FRAME_SAMPLES, type AudioOut, type PlaybackListener } from '../src/media/audio/format.ts';
import { PlaybackListeners } from '../src/media/audio/playback.ts';
import { pino } from 'pino';
import { createAgents } from '../src/agent/agents.ts';
import { Conversation, newItemId } from '../src/session/conversation.ts';
import type { CallEvent } from '../src/session/events.ts';
import { defaultSession } from '../src/session/session.ts';
import { loadConfig } from '../src/config/env.ts';
import { childPids } from '../test/helpers/processes.ts';
import { cpuSeconds as childCpuSeconds } from './lib/talker.ts';

const arg = (name: string, fallback: string) => (process.argv.includes(`--${name}`) ? process.argv[process.argv.indexOf(`--${name}`) + 1]! : fallback);
const TURNS = Number(arg('turns', '10'));
const BARGE_INS = Number(arg('barge-ins', '5'));
const MODEL = arg('model', 'parley-offline');
const VOICE = arg('voice', 'Victoria');
const QUESTION = arg('question', 'what time is it');
/**
 * Where speech is taken to end (the last sample above LOUD) and start (the first above AUDIBLE: an
 * "s" is a faint hiss that VAD already hears); both err towards longer measured times.
 */
const LOUD = 1000;
const AUDIBLE = 10;

/** flite's slt voice (pocketsphinx understands it; espeak-ng's voice it does not), at 48 kHz. */
function speak(text: string): Int16Array {
  const dir = mkdtempSync(join(tmpdir(), 'parley-bench-'));
  try {
    execFileSync('flite', ['-voice', 'slt', '-t', text, '-o', join(dir, 'q.wav')]);
    const wav = readWav(readFileSync(join(dir, 'q.wav')));
    return resampleTo48k(wav.samples, wav.sampleRate);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const above = (pcm: Int16Array, level: number) => pcm.some((s) => Math.abs(s) > level);
const isLoud = (pcm: Int16Array) => above(pcm, LOUD);

/** The call's outgoing audio: a queue drained 960 samples every 20 ms, noting when audio arrives and is cleared. */
class PacedAudioOut implements AudioOut {
  private chunks: Int16Array[] = [];
  private queued = 0;
  /** Since playbackStarted, the samples played; undefined while silent. */
  private played: number | undefined;
  private readonly playback = new PlaybackListeners();
  private readonly timer = setInterval(() => this.tick(), 20);
  firstAudioAt: number | undefined;
  clearedAt: number | undefined;

  write(pcm: Int16Array): void {
    if (this.firstAudioAt === undefined && isLoud(pcm)) this.firstAudioAt = performance.now();
    this.chunks.push(pcm);
    this.queued += pcm.length;
  }
  clear(): number {
    const ms = this.queued / 48;
    this.chunks = [];
    this.queued = 0;
    this.clearedAt = performance.now();
    this.ended(true);
    return ms;
  }
  get queuedMs(): number {
    return this.queued / 48;
  }
  onPlayback(listener: PlaybackListener): () => void {
    return this.playback.add(listener);
  }
  private tick(): void {
    if (!this.queued) return;
    let need = FRAME_SAMPLES;
    while (need > 0 && this.chunks.length) {
      const head = this.chunks[0]!;
      const take = Math.min(need, head.length);
      need -= take;
      if (take === head.length) this.chunks.shift();
      else this.chunks[0] = head.subarray(take);
    }
    if (this.played === undefined) {
      this.played = 0;
      this.playback.started();
    }
    this.played += Math.min(this.queued, FRAME_SAMPLES);
    this.queued = Math.max(0, this.queued - FRAME_SAMPLES);
    if (!this.queued) this.ended(false);
  }
  private ended(interrupted: boolean): void {
    if (this.played === undefined) return;
    const finished = { playbackPositionMs: this.played / 48, interrupted };
    this.played = undefined;
    this.playback.finished(finished);
  }
  stop(): void {
    clearInterval(this.timer);
  }
}

/** The caller's microphone: a 20 ms frame every 20 ms (silence unless speaking), on a drift-free clock. */
class Caller {
  private speech: Int16Array = new Int16Array(0);
  private sent = 0;
  private readonly startedAt = performance.now();
  private timer: NodeJS.Timeout | undefined;
  private done: ((r: { firstAudibleAt: number; lastLoudAt: number }) => void) | undefined;
  private firstAudibleAt = 0;
  private lastLoudAt = 0;

  constructor(private readonly onFrame: (frame: Int16Array) => void) {
    this.tick();
  }

  /** Resolves once the whole clip has been fed, with when its first audible and last loud frames went in. */
  say(pcm: Int16Array): Promise<{ firstAudibleAt: number; lastLoudAt: number }> {
    this.speech = pcm;
    this.firstAudibleAt = this.lastLoudAt = 0;
    return new Promise((resolve) => (this.done = resolve));
  }

  private tick(): void {
    const due = Math.floor((performance.now() - this.startedAt) / 20);
    for (; this.sent < due; this.sent++) {
      const frame = new Int16Array(FRAME_SAMPLES);
      if (this.speech.length) {
        frame.set(this.speech.subarray(0, FRAME_SAMPLES));
        this.speech = this.speech.subarray(Math.min(FRAME_SAMPLES, this.speech.length));
      }
      this.onFrame(frame);
      if (isLoud(frame)) this.lastLoudAt = performance.now();
      if (!this.firstAudibleAt && above(frame, AUDIBLE)) this.firstAudibleAt = performance.now();
      if (!this.speech.length && this.done) {
        this.done({ firstAudibleAt: this.firstAudibleAt, lastLoudAt: this.lastLoudAt });
        this.done = undefined;
      }
    }
    this.timer = setTimeout(() => this.tick(), 5);
  }

  stop(): void {
    clearTimeout(this.timer);
  }
}

/**
 * Process CPU plus that of its live children (the recogniser's worker processes, the speech engine
 * helper) and of finished ones (the synthesisers), in seconds.
 */
function cpuSeconds(): number {
  const f = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
  const own = (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / 100;
  return own + childPids(process.pid).reduce((sum, pid) => {
    try {
      return sum + childCpuSeconds(pid);
    } catch {
      return sum; // it ended (and is counted above once it was waited for)
    }
  }, 0);
}

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)] ?? NaN;
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

const config = loadConfig();
const agents = createAgents(config, pino({ level: 'warn' }));
type Event = CallEvent & { at: number } & Record<string, any>;
const events: Event[] = [];
const audio = new PacedAudioOut();
const conversation = new Conversation();
const session = {
  ...defaultSession({ turnDetection: { type: 'server_vad', threshold: 0.5, prefixPaddingMs: 300, silenceMs: config.VAD_SILENCE_MS, idleTimeoutMs: null, createResponse: true, interruptResponse: true } }),
  model: MODEL,
  voice: VOICE,
  transcribeInput: true,
};
const agent = agents.models.forced(MODEL).factory.create({
  conversationId: 'conv_bench',
  apiKeyId: 'key_bench',
  session: () => session,
  audio,
  conversation,
  emit: (e) => events.push({ ...e, at: performance.now() }),
  turnCompleted: () => {},
  modelFailed: () => {},
});
// The caller's 48 kHz frames at the rate the agent hears at, as a call's transport converts them.
const toAgentRate = frameConverter(48_000, agent.inputSampleRate);
const caller = new Caller((frame) => agent.onAudio(toAgentRate(frame)));

async function next(type: CallEvent['type'], from: number, timeoutMs = 20_000): Promise<Event> {
  const end = performance.now() + timeoutMs;
  for (;;) {
    const e = events.slice(from).find((x) => x.type === type);
    if (e) return e;
    if (performance.now() > end) throw new Error(`no ${type}; got ${events.slice(from).map((x) => x.type).join(', ')}`);
    await sleep(10);
  }
}

interface Turn {
  ttfa: number;
  stages: Record<string, number>;
}

/** One spoken question and its answer; undefined when the turn did not complete. */
async function turn(question: Int16Array, log: boolean): Promise<Turn | undefined> {
  await sleep(800);
  const from = events.length;
  audio.firstAudioAt = undefined;
  const { lastLoudAt } = await caller.say(question);
  try {
    const started = await next('response.audio.started', from);
    const heard = events.slice(from).find((e) => e.type === 'transcription.completed');
    const reply = await next('response.text.done', from);
    await next('output_audio.stopped', from, 30_000);
    const ttfa = audio.firstAudioAt! - lastLoudAt;
    // The agent times its end-of-turn wait from the last frame its VAD called speech; from the last
    // loud frame it also includes the VAD's hangover.
    const stopped = await next('input.speech_stopped', from);
    const stages = { speech_end_to_turn_end_ms: Math.round(stopped.at - lastLoudAt), ...(started.timings as Record<string, number>) };
    if (log) console.log(`heard "${heard?.transcript}" → "${reply.text}" | first audio ${Math.round(ttfa)} ms | ${JSON.stringify(stages)}`);
    return { ttfa, stages };
  } catch (err) {
    console.log(`turn failed: ${(err as Error).message}`);
    return undefined;
  }
}

try {
  const question = speak(QUESTION);
  console.log(`model ${MODEL}, voice ${VOICE}, VAD_SILENCE_MS=${config.VAD_SILENCE_MS}, question "${QUESTION}" (${Math.round(question.length / 48)} ms)`);
  await turn(question, false); // warm-up: the recogniser loads its first decoder

  const cpuStart = cpuSeconds();
  const wallStart = performance.now();
  const turns: Turn[] = [];
  for (let i = 0; i < TURNS; i++) {
    const t = await turn(question, true);
    if (t) turns.push(t);
  }
  const cpu = (100 * (cpuSeconds() - cpuStart)) / ((performance.now() - wallStart) / 1000);

  // Barge-in: the caller speaks over a long reply; from their first audible frame to the queue being cleared.
  const interruption = speak('stop please');
  const barge: number[] = [];
  for (let i = 0; i < BARGE_INS; i++) {
    await sleep(800);
    const from = events.length;
    conversation.add({ id: newItemId(), type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text: 'This is a long answer that goes on and on. '.repeat(6) }] });
    agent.createResponse({});
    await next('response.audio.started', from);
    await sleep(600);
    audio.clearedAt = undefined;
    const { firstAudibleAt } = await caller.say(interruption);
    await next('response.interrupted', from);
    barge.push(audio.clearedAt! - firstAudibleAt);
    await sleep(2000); // the answer to "stop please"
    agent.cancelResponse();
  }

  const row = (name: string, xs: number[]) => console.log(`| ${name} | ${Math.round(percentile(xs, 50))} | ${Math.round(percentile(xs, 95))} | ${Math.round(mean(xs))} |`);
  const stage = (key: string) => turns.map((t) => t.stages[key] ?? NaN);
  console.log(`\n${turns.length}/${TURNS} turns; pipeline CPU while talking: ${cpu.toFixed(0)} % of one core\n`);
  console.log('| measure | p50 ms | p95 ms | mean ms |\n|---|---:|---:|---:|');
  row('end of speech → first agent audio (in-process)', turns.map((t) => t.ttfa));
  row('of which: end of speech → end of turn (VAD hangover + silence)', stage('speech_end_to_turn_end_ms'));
  row('… of that, the silence rule (VAD_SILENCE_MS)', stage('end_of_turn_wait_ms'));
  row('of which: final transcript (PocketSphinx)', stage('transcription_ms'));
  row('of which: first reply token', stage('first_token_ms'));
  row('of which: first synthesised audio after the first token', stage('synthesis_ms'));
  row(`barge-in: caller speaks → agent audio cleared (${barge.length} runs)`, barge);
} finally {
  caller.stop();
  audio.stop();
  agent.close();
  await agents.close();
}
