// The engines this node offers, built once per process from configuration: the voice stages every
// call shares, a reply model per engine, and the registry that picks a call's agent by model.
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config/env.js';
import type { Session } from '../session/session.js';
import { echoAgentFactory } from './echoAgent.js';
import type { EngineHealth } from './health.js';
import { echoModel } from './llm/echo.js';
import { offlineModel } from './llm/offline.js';
import { openAiCompatibleModel } from './llm/openaiCompatible.js';
import type { ReplyModel } from './llm/types.js';
import { AgentRegistry } from './registry.js';
import { StillDecoder } from '../media/stillImage.js';
import type { Metrics } from '../observability/metrics.js';
import type { StageTimings } from '../session/events.js';
import { createVoiceStages, type VoiceStages } from './stages.js';
import { voiceAgentFactory } from './voiceAgent.js';
import { mcpConnector } from './mcp/connector.js';
import type { OutboundGuard } from '../system/outboundRequest.js';

export interface Agents {
  registry: AgentRegistry;
  /** The speech engines' states, for /readyz (empty when the voice engines are unavailable). */
  health(): Record<string, EngineHealth>;
  close(): Promise<void>;
}

/** The reply model an engine name (AgentRegistry.engineOf) stands for; undefined when not configured. */
export function replyModelFor(engine: string, config: Config): ReplyModel | undefined {
  switch (engine) {
    case 'parley-offline':
      return offlineModel;
    case 'echo':
      return echoModel;
    case 'llm':
      return config.LLM_BASE_URL
        ? openAiCompatibleModel({ baseUrl: config.LLM_BASE_URL, model: config.LLM_MODEL, timeoutMs: config.LLM_TIMEOUT_MS, images: config.LLM_IMAGES, ...(config.LLM_API_KEY ? { apiKey: config.LLM_API_KEY } : {}) })
        : undefined;
    default:
      return undefined;
  }
}

/** The voice engines: the offline model, echo, and the OpenAI-compatible backend when configured. */
const VOICE_ENGINES = ['parley-offline', 'echo', 'llm'] as const;

/**
 * `mcpGuard`: where a session's MCP servers may be (the addresses webhooks may reach, Parley's own
 * listeners refused); without it, sessions are told MCP tools are not available.
 */
export function createAgents(config: Config, log: FastifyBaseLogger, metrics?: Metrics, mcpGuard?: OutboundGuard): Agents {
  const registry = new AgentRegistry(config.LLM_BASE_URL ? 'llm' : 'parley-offline');
  registry.register('audio-echo', echoAgentFactory(config.ECHO_DELAY_MS));
  let stages: VoiceStages | undefined;
  try {
    stages = createVoiceStages(config);
  } catch (err) {
    // Without a recogniser the speech engines answer with a model_unavailable error event.
    log.warn({ err: (err as Error).message }, 'speech recognition unavailable: run scripts/setup.sh --runtime');
  }
  if (stages) {
    const models = new Map(VOICE_ENGINES.map((engine) => [engine, replyModelFor(engine, config)] as const));
    // The node's picture decoder: every call's camera and images share its bound.
    const stills = new StillDecoder({ concurrency: config.VISION_DECODE_CONCURRENCY, longSide: config.VISION_IMAGE_LONG_SIDE, timeoutMs: config.VISION_DECODE_TIMEOUT_MS });
    const voice = voiceAgentFactory({
      stages,
      prepareReplyAfterMs: config.PREPARE_REPLY_AFTER_MS,
      stills,
      keyframeWaitMs: config.VISION_KEYFRAME_WAIT_MS,
      onPicture: (event) => {
        if (!metrics) return;
        if ('sent' in event) metrics.visionFramesSent.inc();
        else metrics.visionDecodeSeconds.observe(event.decodedMs / 1000);
      },
      modelFor: (session: Session) => models.get(registry.engineOf(session.model) as (typeof VOICE_ENGINES)[number]) ?? offlineModel,
      onTimings: (model, timings) => metrics && observeTimings(metrics, model, timings),
      ...(mcpGuard ? { mcp: mcpConnector(mcpGuard, { timeoutMs: config.MCP_TIMEOUT_MS, maxOutputBytes: config.MCP_MAX_OUTPUT_BYTES, maxResponseBytes: config.MCP_MAX_RESPONSE_BYTES }) } : {}),
    });
    for (const [engine, model] of models) if (model) registry.register(engine, voice);
  }
  return {
    registry,
    health: () => stages?.health() ?? {},
    close: async () => void (await stages?.close()),
  };
}

/** A reply's stage timings (ms) into the per-stage histograms (seconds), by model. */
function observeTimings(metrics: Metrics, model: string, t: StageTimings): void {
  const pairs = [
    [metrics.endOfTurnWaitSeconds, t.end_of_turn_wait_ms],
    [metrics.transcriptionSeconds, t.transcription_ms],
    [metrics.firstTokenSeconds, t.first_token_ms],
    [metrics.firstAudioSeconds, t.synthesis_ms],
    [metrics.voiceToVoiceSeconds, t.voice_to_voice_ms],
  ] as const;
  for (const [histogram, ms] of pairs) if (ms !== undefined) histogram.observe({ model }, ms / 1000);
}
