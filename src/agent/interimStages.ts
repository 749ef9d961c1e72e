// Interim: the voice stages built from the engines the agent had before the stage modules
// (WebRTC VAD with an end-of-turn silence, PocketSphinx or HTTP recognition, whole-sentence
// synthesis). Replaced by the streaming stage modules.
import { downsample48kTo16k } from '../media/audio/resample.js';
import type { Config } from '../config/env.js';
import type { VoiceStages } from './stages.js';
import { HttpRecognizer } from './stt/httpRecognizer.js';
import { PocketSphinxRecognizer, type SpeechRecognizer } from './stt/recognizer.js';
import type { Recognizer, RecognitionStream } from './stt/types.js';
import { HttpSynthesizer } from './tts/httpSynthesizer.js';
import { LocalSynthesizer, type SpeechSynthesizer } from './tts/synthesizer.js';
import type { SpokenChunk } from './tts/types.js';
import type { EndpointingOptions, TurnDetector, TurnListener } from './turn/types.js';
import { WebRtcVad } from './vad/webrtcVad.js';

const ONSET_FRAMES = 3;
const QUIET_RATIO = 0.01;
const MAX_TURN_MS = 30_000;
const SENTENCE_END = /^([\s\S]*?[.!?…:;])\s+([\s\S]*)$/;

function rms(pcm: Int16Array): number {
  let sum = 0;
  for (const s of pcm) sum += s * s;
  return Math.sqrt(sum / (pcm.length || 1));
}

class LegacyTurnDetector implements TurnDetector {
  private vad: WebRtcVad | undefined;
  private options: EndpointingOptions;
  private preroll: Int16Array[] = [];
  private voicedRun = 0;
  private silentRun = 0;
  private peak = 0;
  private turnMs = 0;
  private inTurn = false;
  private ms = 0;
  private closed = false;

  constructor(mode: 0 | 1 | 2 | 3, options: EndpointingOptions, private readonly listener: TurnListener) {
    this.options = options;
    void WebRtcVad.create(mode).then((vad) => (this.closed ? vad.close() : (this.vad = vad)));
  }

  push(pcm48k: Int16Array): void {
    this.ms += pcm48k.length / 48;
    if (!this.vad) return;
    const pcm = downsample48kTo16k(pcm48k);
    const voiced = this.vad.isSpeech(pcm);
    if (!this.inTurn) {
      this.preroll.push(pcm);
      if (this.preroll.length * 20 > Math.max(this.options.prefixPaddingMs, 60)) this.preroll.shift();
      this.voicedRun = voiced ? this.voicedRun + 1 : 0;
      if (this.voicedRun < ONSET_FRAMES) return;
      this.inTurn = true;
      this.silentRun = this.voicedRun = this.turnMs = this.peak = 0;
      const pre = new Int16Array(this.preroll.reduce((n, f) => n + f.length, 0));
      let at = 0;
      for (const f of this.preroll) pre.set(f, (at += f.length) - f.length);
      this.preroll = [];
      this.listener.speechStarted(this.ms - pre.length / 16, pre);
      return;
    }
    this.listener.speech(pcm);
    this.turnMs += 20;
    const level = rms(pcm);
    if (voiced) this.peak = Math.max(this.peak, level);
    const speaking = voiced && level > this.peak * QUIET_RATIO;
    this.silentRun = speaking ? 0 : this.silentRun + 1;
    if (this.silentRun * 20 >= this.options.silenceMs || this.turnMs >= MAX_TURN_MS) {
      this.inTurn = false;
      this.listener.speechStopped(this.ms - this.silentRun * 20);
    }
  }

  configure(options: Partial<EndpointingOptions>): void {
    this.options = { ...this.options, ...options };
  }

  reset(): void {
    this.inTurn = false;
    this.preroll = [];
    this.voicedRun = 0;
  }

  close(): void {
    this.closed = true;
    this.vad?.close();
    this.vad = undefined;
  }
}

function recognizerOf(engine: SpeechRecognizer, name: string): Recognizer {
  return {
    name,
    start(): RecognitionStream {
      let partial: (t: string) => void = () => {};
      const u = engine.start((t) => partial(t));
      return { write: (pcm) => u.write(pcm), onPartial: (cb) => void (partial = cb), finish: () => u.finish(), abort: () => u.abort() };
    },
    health: () => ({ state: 'ready' }),
    close: () => engine.close(),
  };
}

function speakerOf(engine: SpeechSynthesizer) {
  return async function* speak(text: AsyncIterable<string>, voice: string, signal: AbortSignal): AsyncIterable<SpokenChunk> {
    let pending = '';
    const sentences: Promise<Int16Array>[] = [];
    const texts: string[] = [];
    const queue = (s: string) => {
      texts.push(s);
      sentences.push(engine.synthesize(s, voice, signal));
    };
    let next = 0;
    for await (const delta of text) {
      pending += delta;
      for (let m = SENTENCE_END.exec(pending); m; m = SENTENCE_END.exec(pending)) {
        queue(m[1]!);
        pending = m[2]!;
      }
      while (next < sentences.length && (await Promise.race([sentences[next]!.then(() => true), Promise.resolve(false)]))) {
        yield { text: texts[next]!, pcm: await sentences[next]! };
        next++;
      }
    }
    if (pending.trim()) queue(pending);
    for (; next < sentences.length; next++) yield { text: texts[next]!, pcm: await sentences[next]! };
  };
}

export function createInterimStages(config: Config): VoiceStages {
  const timeoutMs = config.LLM_TIMEOUT_MS;
  const recognizer = config.STT_URL
    ? recognizerOf(new HttpRecognizer({ baseUrl: config.STT_URL, model: config.STT_MODEL, timeoutMs, ...(config.STT_API_KEY ? { apiKey: config.STT_API_KEY } : {}) }), 'http')
    : recognizerOf(new PocketSphinxRecognizer(config.STT_WORKERS), 'pocketsphinx');
  const synthesizer = config.TTS_URL
    ? new HttpSynthesizer({ baseUrl: config.TTS_URL, model: config.TTS_MODEL, timeoutMs, ...(config.TTS_API_KEY ? { apiKey: config.TTS_API_KEY } : {}) })
    : new LocalSynthesizer();
  return {
    turnDetector: (options, listener) => new LegacyTurnDetector(config.VAD_MODE as 0 | 1 | 2 | 3, options, listener),
    recognizer,
    speak: speakerOf(synthesizer),
    health: () => ({ stt: recognizer.health() }),
    close: () => recognizer.close(),
  };
}
