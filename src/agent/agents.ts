// The engines this node offers, built once per process from configuration.
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config/env.js';
import { echoAgentFactory } from './echoAgent.js';
import { AgentRegistry } from './registry.js';
import { createVoicePipeline, replyModelFor, voiceAgentFactory, type VoicePipeline } from './voiceAgent.js';

export interface Agents {
  registry: AgentRegistry;
  close(): Promise<void>;
}

/** The voice engines: the offline model, echo, and the OpenAI-compatible backend when configured. */
const VOICE_ENGINES = ['parley-offline', 'echo', 'llm'] as const;

export function createAgents(config: Config, log: FastifyBaseLogger): Agents {
  const registry = new AgentRegistry(config.LLM_BASE_URL ? 'llm' : 'parley-offline');
  registry.register('audio-echo', echoAgentFactory(config.ECHO_DELAY_MS));
  let pipeline: VoicePipeline | undefined;
  try {
    pipeline = createVoicePipeline(config);
  } catch (err) {
    // Without a recogniser the speech engines answer with a model_unavailable error event.
    log.warn({ err: (err as Error).message }, 'speech recognition unavailable: run scripts/setup.sh --runtime');
  }
  if (pipeline) {
    for (const engine of VOICE_ENGINES) {
      const model = replyModelFor(engine, config);
      if (model) registry.register(engine, voiceAgentFactory(pipeline, model));
    }
  }
  return { registry, close: async () => void (await pipeline?.recognizer.close()) };
}
