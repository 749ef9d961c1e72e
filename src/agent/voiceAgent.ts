// The voice agent: a chain of small stages — turn detection (VAD + end-of-turn silence), speech to
// text, reply generation, text to speech — with barge-in and the session's events and history.
import { downsample48kTo16k } from '../media/audio/resample.js';
import { echoModel } from './llm/echo.js';
import { offlineModel } from './llm/offline.js';
import { openAiCompatibleModel } from './llm/openaiCompatible.js';
import type { ReplyModel } from './llm/types.js';
import { AgentRegistry } from './registry.js';
import { HttpRecognizer } from './stt/httpRecognizer.js';
import { PocketSphinxRecognizer, type SpeechRecognizer, type Utterance } from './stt/recognizer.js';
import { HttpSynthesizer } from './tts/httpSynthesizer.js';
import { LocalSynthesizer, type SpeechSynthesizer } from './tts/synthesizer.js';
import type { Agent, AgentContext, AgentFactory, ConversationTurn } from './types.js';
import { WebRtcVad } from './vad/webrtcVad.js';
import type { SessionParams } from '../session/params.js';
import type { Config } from '../config/env.js';

/** Text spoken by a catalogue voice with the local engines, 48 kHz mono. */
export { synthesize } from './tts/synthesizer.js';

export interface VoicePipeline {
  recognizer: SpeechRecognizer;
  synthesizer: SpeechSynthesizer;
  /** Silence that ends the caller's turn. */
  silenceMs: number;
  vadMode: 0 | 1 | 2 | 3;
}

const FRAME_MS = 20;
/** Voiced frames in a row that count as the caller starting to speak (60 ms). */
const ONSET_FRAMES = 3;
/** Audio kept from before the onset, so the first syllable reaches the recogniser. */
const PREROLL_FRAMES = 15;
/** A frame this far under the turn's loudest (-40 dB) ends speech for the end-of-turn rule. */
const QUIET_RATIO = 0.01;
/** A turn longer than this is ended anyway. */
const MAX_TURN_MS = 30_000;
/** A complete sentence at the start of the text (its end mark followed by whitespace), and the rest. */
const SENTENCE_END = /^([\s\S]*?[.!?…:;])\s+([\s\S]*)$/;
const APOLOGY = "Sorry, I couldn't come up with an answer just now. Please try again.";

function rms(pcm: Int16Array): number {
  let sum = 0;
  for (const s of pcm) sum += s * s;
  return Math.sqrt(sum / (pcm.length || 1));
}

/** A reply in progress: generation, synthesis and playback, cancellable as one. */
interface Reply {
  abort: AbortController;
  generationDone: boolean;
}

export class VoiceAgent implements Agent {
  private vad: WebRtcVad | undefined;
  private params: SessionParams;
  private readonly history: ConversationTurn[];
  private preroll: Int16Array[] = [];
  private voicedRun = 0;
  private silentRun = 0;
  /** RMS of the loudest voiced frame of the current turn. */
  private turnPeak = 0;
  private turnFrames = 0;
  private utterance: Utterance | undefined;
  private reply: Reply | undefined;
  /** When the last voiced frame of the current turn arrived (start of the end-of-turn wait). */
  private lastVoicedAt = 0;
  /** Words of a turn that the caller continued before it was answered. */
  private unanswered = '';
  private closed = false;

  constructor(
    private readonly ctx: AgentContext,
    private readonly pipeline: VoicePipeline,
    private readonly model: ReplyModel,
  ) {
    this.params = ctx.params;
    this.history = [...ctx.history];
    void WebRtcVad.create(pipeline.vadMode).then((vad) => {
      if (this.closed) vad.close();
      else this.vad = vad;
    });
    ctx.audio.onDrained(() => this.onPlaybackDrained());
  }

  onAudio(frame: Int16Array): void {
    // Heard whatever `modalities` says (published clients send [] and stream the mic); it gates video only.
    if (!this.vad) return;
    const pcm16k = downsample48kTo16k(frame);
    const voiced = this.vad.isSpeech(pcm16k);
    if (!this.utterance) {
      this.preroll.push(pcm16k);
      if (this.preroll.length > PREROLL_FRAMES) this.preroll.shift();
      this.voicedRun = voiced ? this.voicedRun + 1 : 0;
      if (this.voicedRun >= ONSET_FRAMES) this.startTurn();
      return;
    }
    this.utterance.write(pcm16k);
    this.turnFrames++;
    // WebRTC VAD goes on calling frames speech for 100-200 ms after the voice stops (its hangover):
    // for the end-of-turn rule, a frame 40 dB under the turn's loudest is silence whatever it says.
    const level = rms(pcm16k);
    if (voiced) this.turnPeak = Math.max(this.turnPeak, level);
    const speaking = voiced && level > this.turnPeak * QUIET_RATIO;
    this.silentRun = speaking ? 0 : this.silentRun + 1;
    if (speaking) this.lastVoicedAt = performance.now();
    if (this.silentRun * FRAME_MS >= this.pipeline.silenceMs || this.turnFrames * FRAME_MS >= MAX_TURN_MS) void this.endTurn();
  }

  onUserText(text: string): void {
    void this.respond(text, false);
  }

  onParamsUpdate(params: SessionParams): void {
    this.params = params;
  }

  cancel(): void {
    this.stopReply();
  }

  close(): void {
    this.closed = true;
    this.stopReply();
    this.utterance?.abort();
    this.vad?.close();
    this.vad = undefined;
  }

  private startTurn(): void {
    this.ctx.emit({ type: 'input_audio_buffer.speech_started' });
    this.interrupt();
    this.utterance = this.pipeline.recognizer.start();
    for (const f of this.preroll) this.utterance.write(f);
    this.preroll = [];
    this.turnFrames = 0;
    this.silentRun = 0;
    this.voicedRun = 0;
    this.turnPeak = 0;
  }

  private async endTurn(): Promise<void> {
    const utterance = this.utterance!;
    this.utterance = undefined;
    this.ctx.emit({ type: 'input_audio_buffer.speech_stopped' });
    const turnEndedAt = performance.now();
    let transcript: string;
    try {
      transcript = (await utterance.finish()).trim();
    } catch (err) {
      this.ctx.emit({ type: 'error', error: { type: 'server_error', code: 'transcription_failed', message: (err as Error).message, param: null } });
      return;
    }
    transcript = [this.unanswered, transcript].filter(Boolean).join(' ');
    this.unanswered = '';
    // Noise that the recogniser heard as nothing is not a turn.
    if (!transcript || this.closed) return;
    if (this.utterance) {
      // The caller went on speaking while this part was transcribed: answer both parts together.
      this.unanswered = transcript;
      return;
    }
    await this.respond(transcript, true, {
      end_of_turn_wait_ms: Math.round(turnEndedAt - this.lastVoicedAt),
      transcription_ms: Math.round(performance.now() - turnEndedAt),
    });
  }

  /** Barge-in: the caller speaks over the agent. Stops the reply and drops its unsent audio. */
  private interrupt(): void {
    if (!this.reply && this.ctx.audio.queuedMs === 0) return;
    const droppedMs = this.stopReply();
    this.ctx.emit({ type: 'response.interrupted', dropped_audio_ms: Math.round(droppedMs) });
  }

  private stopReply(): number {
    this.reply?.abort.abort();
    this.reply = undefined;
    return this.ctx.audio.clear();
  }

  /** `timings` so far (spoken turns) are completed with the reply's and sent with response.audio.started. */
  private async respond(userText: string, spoken: boolean, timings: Record<string, number> = {}): Promise<void> {
    if (spoken && this.params.return_transcription) {
      this.ctx.emit({ type: 'conversation.item.input_audio_transcription.completed', transcript: userText });
    }
    // One reply at a time: a new turn replaces one still in progress.
    this.interrupt();
    const history = [...this.history];
    this.history.push({ role: 'user', text: userText });
    this.ctx.recordTurn({ role: 'user', text: userText });

    const reply: Reply = { abort: new AbortController(), generationDone: false };
    this.reply = reply;
    const signal = reply.abort.signal;
    let text = '';
    let pending = '';
    let playback = Promise.resolve();
    let audioStarted = false;
    const replyStartedAt = performance.now();
    let firstTokenAt: number | undefined;
    const speakSentence = (sentence: string) => {
      // Synthesis starts at once; playback keeps sentence order.
      const pcm = this.pipeline.synthesizer.synthesize(sentence, this.params.voice, signal);
      playback = playback.then(async () => {
        const audio = await pcm.catch(() => undefined);
        if (!audio?.length || signal.aborted) return;
        if (!audioStarted) {
          audioStarted = true;
          const now = performance.now();
          this.ctx.emit({
            type: 'response.audio.started',
            // Where the time to first audio went, for operators and bench/voice.ts.
            timings: { ...timings, first_token_ms: Math.round((firstTokenAt ?? now) - replyStartedAt), synthesis_ms: Math.round(now - (firstTokenAt ?? now)) },
          });
        }
        this.ctx.audio.write(audio);
      });
    };

    try {
      const messages = [...history.map((t) => ({ role: t.role, content: t.text })), { role: 'user' as const, content: userText }];
      const request = { messages, instructions: this.params.instructions, temperature: this.params.temperature, tools: [], toolChoice: 'auto' as const, signal };
      for await (const chunk of this.model.reply(request)) {
        if (signal.aborted) return;
        if (chunk.type !== 'text') continue;
        const delta = chunk.delta;
        firstTokenAt ??= performance.now();
        text += delta;
        pending += delta;
        this.ctx.emit({ type: 'response.text.delta', delta });
        // Speak each sentence as soon as it is complete (a chunk may hold several).
        for (let m = SENTENCE_END.exec(pending); m; m = SENTENCE_END.exec(pending)) {
          speakSentence(m[1]!);
          pending = m[2]!;
        }
      }
      if (pending.trim()) speakSentence(pending);
    } catch (err) {
      if (signal.aborted) return;
      this.ctx.emit({ type: 'error', error: { type: 'server_error', code: 'model_error', message: `The language model failed: ${(err as Error).message}`, param: null } });
      text = APOLOGY;
      speakSentence(APOLOGY);
    }
    if (signal.aborted) return;
    this.ctx.emit({ type: 'response.output_item.done', text });
    this.history.push({ role: 'assistant', text });
    this.ctx.recordTurn({ role: 'assistant', text });
    await playback;
    if (signal.aborted) return;
    reply.generationDone = true;
    if (this.ctx.audio.queuedMs === 0) this.onPlaybackDrained();
  }

  private onPlaybackDrained(): void {
    const reply = this.reply;
    if (!reply?.generationDone) return;
    this.reply = undefined;
    this.ctx.emit({ type: 'response.audio.done' });
  }
}

export function voiceAgentFactory(pipeline: VoicePipeline, model: ReplyModel): AgentFactory {
  return { create: (ctx) => new VoiceAgent(ctx, pipeline, model) };
}

/** The settings the voice agent reads (all in src/config/env.ts). */
export type VoiceConfig = Pick<
  Config,
  | 'VAD_SILENCE_MS' | 'VAD_MODE' | 'STT_WORKERS' | 'STT_URL' | 'STT_API_KEY' | 'STT_MODEL' | 'TTS_URL' | 'TTS_API_KEY' | 'TTS_MODEL'
  | 'LLM_BASE_URL' | 'LLM_API_KEY' | 'LLM_MODEL' | 'LLM_TIMEOUT_MS'
>;

/**
 * The stages every call of this process shares, from configuration: the HTTP backends when their
 * URLs are set, else PocketSphinx (worker threads) and the local voices. Throws when the built-in
 * recogniser's model is not installed.
 */
export function createVoicePipeline(config: VoiceConfig): VoicePipeline {
  const timeoutMs = config.LLM_TIMEOUT_MS;
  return {
    recognizer: config.STT_URL
      ? new HttpRecognizer({ baseUrl: config.STT_URL, model: config.STT_MODEL, timeoutMs, ...(config.STT_API_KEY ? { apiKey: config.STT_API_KEY } : {}) })
      : new PocketSphinxRecognizer(config.STT_WORKERS),
    synthesizer: config.TTS_URL
      ? new HttpSynthesizer({ baseUrl: config.TTS_URL, model: config.TTS_MODEL, timeoutMs, ...(config.TTS_API_KEY ? { apiKey: config.TTS_API_KEY } : {}) })
      : new LocalSynthesizer(),
    silenceMs: config.VAD_SILENCE_MS,
    vadMode: config.VAD_MODE as VoicePipeline['vadMode'],
  };
}

/** The reply model an engine name (AgentRegistry.engineOf) stands for; undefined when not configured. */
export function replyModelFor(engine: string, config: VoiceConfig): ReplyModel | undefined {
  switch (engine) {
    case 'parley-offline':
      return offlineModel;
    case 'echo':
      return echoModel;
    case 'llm':
      return config.LLM_BASE_URL
        ? openAiCompatibleModel({ baseUrl: config.LLM_BASE_URL, model: config.LLM_MODEL, timeoutMs: config.LLM_TIMEOUT_MS, ...(config.LLM_API_KEY ? { apiKey: config.LLM_API_KEY } : {}) })
        : undefined;
    default:
      return undefined;
  }
}

export interface VoiceAgentFactory extends AgentFactory {
  readonly pipeline: VoicePipeline;
  /** Stops the shared stages (the recogniser's worker threads). */
  close(): Promise<void>;
}

/**
 * Voice agents whose reply model follows each call's `params.model`: `orga-1-beta` runs the
 * OpenAI-compatible backend when LLM_BASE_URL is set, else `parley-offline`; `echo` repeats the
 * caller. A model this pipeline does not run (`audio-echo`) gets `parley-offline`.
 */
export function createVoiceAgentFactory(config: VoiceConfig, pipeline: VoicePipeline = createVoicePipeline(config)): VoiceAgentFactory {
  const registry = new AgentRegistry(config.LLM_BASE_URL ? 'llm' : 'parley-offline');
  return {
    pipeline,
    create: (ctx) => new VoiceAgent(ctx, pipeline, replyModelFor(registry.engineOf(ctx.params.model), config) ?? offlineModel),
    close: () => pipeline.recognizer.close(),
  };
}

/** The `echo` model's behaviour through the same pipeline: speech → text → the same words spoken back. */
export function createEchoVoiceAgentFactory(config: VoiceConfig, pipeline: VoicePipeline = createVoicePipeline(config)): VoiceAgentFactory {
  return { pipeline, create: (ctx) => new VoiceAgent(ctx, pipeline, echoModel), close: () => pipeline.recognizer.close() };
}
