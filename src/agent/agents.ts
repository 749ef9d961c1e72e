// The engines this node offers, built once per process from configuration.
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config/env.js';
import { echoAgentFactory } from './echoAgent.js';
import { echoModel } from './llm/echo.js';
import { offlineModel } from './llm/offline.js';
import { openAiCompatibleModel } from './llm/openaiCompatible.js';
import { AgentRegistry } from './registry.js';
import { HttpRecognizer } from './stt/httpRecognizer.js';
import { PocketSphinxRecognizer, type SpeechRecognizer } from './stt/recognizer.js';
import { HttpSynthesizer } from './tts/httpSynthesizer.js';
import { LocalSynthesizer } from './tts/synthesizer.js';
import { voiceAgentFactory, type VoicePipeline } from './voiceAgent.js';

export interface Agents {
  registry: AgentRegistry;
  close(): Promise<void>;
}

export function createAgents(config: Config, log: FastifyBaseLogger): Agents {
  const registry = new AgentRegistry(config.LLM_BASE_URL ? 'llm' : 'parley-offline');
  registry.register('audio-echo', echoAgentFactory(config.ECHO_DELAY_MS));
  let recognizer: SpeechRecognizer | undefined;
  try {
    recognizer = config.STT_URL
      ? new HttpRecognizer({ baseUrl: config.STT_URL, model: config.STT_MODEL, timeoutMs: config.LLM_TIMEOUT_MS, ...(config.STT_API_KEY ? { apiKey: config.STT_API_KEY } : {}) })
      : new PocketSphinxRecognizer(config.STT_WORKERS);
  } catch (err) {
    // Without a recogniser the speech engines answer with a model_unavailable error event.
    log.warn({ err: (err as Error).message }, 'speech recognition unavailable: run scripts/setup.sh --runtime');
  }
  if (recognizer) {
    const pipeline: VoicePipeline = {
      recognizer,
      synthesizer: config.TTS_URL
        ? new HttpSynthesizer({ baseUrl: config.TTS_URL, model: config.TTS_MODEL, timeoutMs: config.LLM_TIMEOUT_MS, ...(config.TTS_API_KEY ? { apiKey: config.TTS_API_KEY } : {}) })
        : new LocalSynthesizer(),
      silenceMs: config.VAD_SILENCE_MS,
      vadMode: config.VAD_MODE as VoicePipeline['vadMode'],
    };
    registry.register('parley-offline', voiceAgentFactory(pipeline, offlineModel));
    registry.register('echo', voiceAgentFactory(pipeline, echoModel));
    if (config.LLM_BASE_URL) {
      const model = openAiCompatibleModel({
        baseUrl: config.LLM_BASE_URL,
        model: config.LLM_MODEL,
        timeoutMs: config.LLM_TIMEOUT_MS,
        ...(config.LLM_API_KEY ? { apiKey: config.LLM_API_KEY } : {}),
      });
      registry.register('llm', voiceAgentFactory(pipeline, model));
    }
  }
  return { registry, close: async () => void (await recognizer?.close()) };
}
