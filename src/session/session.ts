// A call's session: what the agent does and how, in Parley's own terms. Each wire protocol (Orga's
// `params`/`session.update`, OpenAI's session object) reads into it and writes out of it.
import type { AudioEncoding } from '../media/audio/wireAudio.js';
import { DEFAULT_MODEL, DEFAULT_TEMPERATURE, DEFAULT_VOICE, type Modality } from './catalog.js';
import type { McpServer, ToolChoice, ToolDefinition } from './tools.js';

/** When the caller's turn starts and ends, and what the agent does then (OpenAI `turn_detection`). */
export interface TurnDetection {
  /** `none`: turns end only when the client commits them. */
  type: 'server_vad' | 'semantic_vad' | 'none';
  /** VAD probability that counts as speech, 0–1. */
  threshold: number;
  /** Audio kept from before the onset. */
  prefixPaddingMs: number;
  /** Silence that ends the turn. */
  silenceMs: number;
  /** After the agent finished speaking, silence this long prompts a reply (null: never). */
  idleTimeoutMs: number | null;
  /** Answer each turn automatically. */
  createResponse: boolean;
  /** The caller speaking over a reply stops it (barge-in). */
  interruptResponse: boolean;
}

export interface Session {
  /** The model id the client asked for (catalogue id, or any name the OpenAI protocol passes). */
  model: string;
  /** Catalogue voice name. */
  voice: string;
  temperature: number;
  instructions: string | null;
  /** Orga's modalities: `video` decides whether camera frames reach the agent (audio always does). */
  modalities: Modality[];
  /** What replies carry: `audio` (spoken, with a transcript) or `text` only. */
  outputModalities: ('audio' | 'text')[];
  /** Send the caller's transcripts to the client. */
  transcribeInput: boolean;
  /** Keep the conversation's turns in the store. */
  history: boolean;
  turnDetection: TurnDetection;
  /** Noise suppression of the caller's audio before turn detection and recognition (OpenAI `noise_reduction`); null: none. */
  noiseReduction: NoiseReduction | null;
  tools: ToolDefinition[];
  /** Remote MCP servers whose tools the model may call (absent: none). */
  mcpServers?: McpServer[];
  toolChoice: ToolChoice;
  /** Upper bound on a reply's tokens (null: no bound). */
  maxOutputTokens: number | null;
  /**
   * `transcription`: a transcription session (OpenAI `session.type: "transcription"`): the caller's
   * turns are transcribed and nothing is answered. Absent: a conversation with the agent.
   */
  kind?: 'transcription';
  /** Extra fields the client asked to be included (OpenAI `include`), kept and echoed. */
  include?: string[];
  /** How audio carried inside events (a WebSocket session's) is encoded each way; absent: pcm16. WebRTC carries Opus whatever these say. */
  inputAudio?: AudioEncoding;
  outputAudio?: AudioEncoding;
}

/** OpenAI's noise_reduction types: a headset or handset microphone, or a laptop's or room's. */
export type NoiseReduction = 'near_field' | 'far_field';

/** Defaults that come from the operator's configuration. */
export interface SessionDefaults {
  turnDetection: TurnDetection;
  /** NOISE_REDUCTION: what a session starts with (unset: none). */
  noiseReduction?: NoiseReduction | null;
}

export function defaultSession(defaults: SessionDefaults): Session {
  return {
    model: DEFAULT_MODEL,
    voice: DEFAULT_VOICE,
    temperature: DEFAULT_TEMPERATURE,
    instructions: null,
    modalities: ['audio', 'video'],
    outputModalities: ['audio'],
    transcribeInput: false,
    history: true,
    turnDetection: { ...defaults.turnDetection },
    noiseReduction: defaults.noiseReduction ?? null,
    tools: [],
    toolChoice: 'auto',
    maxOutputTokens: null,
  };
}

/** The session as it may be stored or shown: an MCP server's headers (its credentials) left out. */
export function withoutSecrets(session: Session): Session {
  if (!session.mcpServers?.some((m) => m.headers)) return session;
  return { ...session, mcpServers: session.mcpServers.map(({ headers: _headers, ...m }) => m) };
}
