// The engines this node offers, built once per process from configuration: the voice stages every
// call shares, a reply model per engine, and the registry that picks a call's agent by model.
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config/env.js';
import { echoAgentFactory } from './echoAgent.js';
import type { EngineHealth } from './health.js';
import { echoModel } from './llm/echo.js';
import { offlineModel } from './llm/offline.js';
import { openAiCompatibleModel } from './llm/openaiCompatible.js';
import type { ReplyModel } from './llm/types.js';
import { ModelRouter } from './modelRouter.js';
import type { ModelEntry, RealtimeEntry } from '../config/models.js';
import { HttpRecognizer } from './stt/http.js';
import { HttpSpeechEngine } from './tts/http.js';
import type { AgentFactory } from './types.js';
import { StillDecoder } from '../media/stillImage.js';
import type { Metrics } from '../observability/metrics.js';
import type { StageTimings } from '../session/events.js';
import { createVoiceStages, withEngines, type VoiceStages } from './stages.js';
import { voiceAgentFactory } from './voiceAgent.js';
import { mcpConnector } from './mcp/connector.js';
import type { OutboundGuard } from '../system/outboundRequest.js';

export interface Agents {
  /** The catalogue's models: which agent runs a call, who may use what, the breakers. */
  models: ModelRouter;
  /** The speech engines' states, for /readyz (empty when the voice engines are unavailable). */
  health(): Record<string, EngineHealth>;
  close(): Promise<void>;
}

export interface AgentsOptions {
  metrics?: Metrics;
  /**
   * Where a session's MCP servers may be (the addresses webhooks may reach, Parley's own listeners
   * refused); without it, sessions are told MCP tools are not available.
   */
  mcpGuard?: OutboundGuard;
  /** The agents of a realtime model upstream (absent: realtime models cannot run here). */
  realtime?: (entry: RealtimeEntry, node: NodeParts) => AgentFactory;
}

/** What every model's agents on the node share: the picture decoder and the metrics' hooks. */
export interface NodeParts {
  stills: StillDecoder;
  onTimings(model: string, timings: StageTimings): void;
  onPicture(event: { decodedMs: number } | { sent: true }): void;
}

/** The reply model of a voice model of the catalogue. */
function replyModelOf(entry: ModelEntry, config: Config): ReplyModel | undefined {
  switch (entry.kind) {
    case 'offline':
      return offlineModel;
    case 'echo':
      return echoModel;
    case 'cascade':
      return openAiCompatibleModel({ baseUrl: entry.llm.url, model: entry.llm.model, timeoutMs: config.LLM_TIMEOUT_MS, images: entry.llm.images, ...(entry.llm.apiKey ? { apiKey: entry.llm.apiKey } : {}) });
    default:
      return undefined;
  }
}

/** The node's agents: a voice agent per voice model of the catalogue, the echo agent, realtime models. */
export function createAgents(config: Config, log: FastifyBaseLogger, options: AgentsOptions = {}): Agents {
  const { metrics, mcpGuard } = options;
  let stages: VoiceStages | undefined;
  try {
    stages = createVoiceStages(config);
  } catch (err) {
    // Without a recogniser the voice models cannot run here: calls on them go to a fallback or are refused.
    log.warn({ err: (err as Error).message }, 'speech recognition unavailable: run scripts/setup.sh --runtime');
  }
  // The node's picture decoder: every call's camera and images share its bound.
  const stills = new StillDecoder({ concurrency: config.VISION_DECODE_CONCURRENCY, longSide: config.VISION_IMAGE_LONG_SIDE, timeoutMs: config.VISION_DECODE_TIMEOUT_MS });
  const mcp = mcpGuard ? mcpConnector(mcpGuard, { timeoutMs: config.MCP_TIMEOUT_MS, maxOutputBytes: config.MCP_MAX_OUTPUT_BYTES, maxResponseBytes: config.MCP_MAX_RESPONSE_BYTES }) : undefined;
  const node: NodeParts = {
    stills,
    onTimings: (model, timings) => metrics && observeTimings(metrics, model, timings),
    onPicture: (event) => {
      if (!metrics) return;
      if ('sent' in event) metrics.visionFramesSent.inc();
      else metrics.visionDecodeSeconds.observe(event.decodedMs / 1000);
    },
  };
  const ownStages: VoiceStages[] = [];
  const voiceFactory = (entry: ModelEntry, model: ReplyModel): AgentFactory | undefined => {
    if (!stages) return undefined;
    let entryStages = stages;
    if (entry.kind === 'cascade' && (entry.stt || entry.tts)) {
      const recognizer = entry.stt ? new HttpRecognizer({ baseUrl: entry.stt.url, model: entry.stt.model, timeoutMs: config.LLM_TIMEOUT_MS, ...(entry.stt.apiKey ? { apiKey: entry.stt.apiKey } : {}) }) : undefined;
      const speech = entry.tts ? new HttpSpeechEngine({ baseUrl: entry.tts.url, model: entry.tts.model, timeoutMs: config.LLM_TIMEOUT_MS, voices: entry.tts.voices, ...(entry.tts.apiKey ? { apiKey: entry.tts.apiKey } : {}) }) : undefined;
      entryStages = withEngines(stages, { recognizer, speech });
      ownStages.push(entryStages);
    }
    return voiceAgentFactory({
      stages: entryStages,
      prepareReplyAfterMs: config.PREPARE_REPLY_AFTER_MS,
      stills,
      keyframeWaitMs: config.VISION_KEYFRAME_WAIT_MS,
      onPicture: node.onPicture,
      modelFor: () => model,
      onTimings: (_, timings) => node.onTimings(entry.id, timings),
      ...(mcp ? { mcp } : {}),
    });
  };
  const factoryOf = (entry: ModelEntry): AgentFactory | undefined => {
    if (entry.kind === 'audio-echo') return echoAgentFactory(config.ECHO_DELAY_MS);
    if (entry.kind === 'realtime') return options.realtime?.(entry, node);
    const model = replyModelOf(entry, config);
    return model && voiceFactory(entry, model);
  };
  const models = new ModelRouter(config.MODELS, factoryOf, { failures: config.MODEL_BREAKER_FAILURES, cooldownMs: config.MODEL_BREAKER_COOLDOWN_MS }, metrics);
  return {
    models,
    health: () => stages?.health() ?? {},
    close: async () => {
      await Promise.all(ownStages.map((s) => s.close()));
      await stages?.close();
    },
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
