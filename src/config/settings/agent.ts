// Settings of one area. The voice agent: voice activity detection, recognition, synthesis, language and realtime models, vision and MCP tools. src/config/env.ts merges the areas into the one validated table.
import { bool, int, list, num, oneOf, type Setting, str } from '../parsers.js';

export const agentSettings = {
  VAD: {
    doc: "Voice-activity detector for the caller's turns: silero (Silero VAD v5, in-process ONNX, ≈ 0.3 ms per 32 ms) or webrtc (WebRTC VAD, cheaper, less sure of noise).",
    default: 'silero',
    parse: oneOf('silero', 'webrtc'),
  },
  NOISE_REDUCTION: {
    doc: "Noise suppression (RNNoise, in-process WebAssembly) of the caller's turns before the recogniser hears them, for sessions that do not choose (OpenAI's audio.input.noise_reduction; null there turns it off): off, near_field (headsets, handsets) or far_field (laptops, rooms; the same model here). Off by default, as OpenAI's sessions; it costs ≈ 1.5 % of a core while the caller speaks (bench/noise.ts).",
    default: 'off',
    parse: oneOf('off', 'near_field', 'far_field'),
  },
  VAD_THRESHOLD: { doc: "Speech probability (0–1) at or above which the caller's audio is speech; a session's turn_detection.threshold overrides it.", default: '0.5', parse: num(0.01, 0.99) },
  VAD_PREFIX_PADDING_MS: { doc: "Audio from before the caller's speech onset handed to the recogniser with it (turn_detection.prefix_padding_ms).", default: '300', parse: int(0, 2000) },
  VAD_SILENCE_MS: {
    doc: "Silence that ends the caller's turn (turn_detection.silence_duration_ms). 300 keeps every test sentence of bench/stages.ts one turn with either VAD (their longest pause needs 180 ms with Silero, 260 ms with WebRTC); slow speakers may want more.",
    default: '300',
    parse: int(100, 5000),
  },
  VAD_MODE: { doc: 'WebRTC VAD aggressiveness (VAD=webrtc), 0 (keeps more as speech) to 3.', default: '2', parse: int(0, 3) },
  VAD_GATE: {
    doc: "VAD=silero: run the model only where WebRTC VAD (mode 0) hears sound, and for 500 ms after; silence in between is judged without it (≈ 0.01 ms instead of ≈ 0.15 ms per 32 ms window). The hangover outlasts Silero's own lag, so the silence ending a turn is still Silero's to time (boundaries move by at most one 32 ms window). false: Silero on every window.",
    default: 'true',
    parse: bool,
  },
  PREPARE_REPLY_AFTER_MS: {
    doc: "Silence inside the caller's turn after which the reply is prepared unseen (recognised, generated, its first clause synthesised), so it plays the moment the turn's end is certain; dropped if the caller goes on. Must be under the turn's silence to help; 0 turns it off. With a paid LLM_BASE_URL, each dropped preparation is one extra request.",
    default: '100',
    parse: int(0, 5000),
  },
  LLM_BASE_URL: { doc: 'OpenAI-compatible API base (e.g. http://127.0.0.1:11434/v1); when set (and no MODELS_FILE), the catalogue gets parley-cascade: its chat completions with the node\'s speech recognition and synthesis, the default model (orga-1-beta runs it).', parse: str },
  LLM_API_KEY: { doc: 'Bearer key for LLM_BASE_URL (never logged).', parse: str },
  LLM_MODEL: { doc: 'Model name sent to LLM_BASE_URL.', default: 'gpt-4o-mini', parse: str },
  LLM_IMAGES: {
    doc: "Whether LLM_MODEL takes images (a vision model: gpt-4o-mini, Qwen2-VL on vLLM, llava on Ollama…): the camera's picture of each turn and the clients' input_image parts are sent to it as image_url content parts. false: they are left out, and the model is told that an image was shown.",
    default: 'true',
    parse: bool,
  },
  VISION_DECODE_CONCURRENCY: {
    doc: "Pictures (the camera's key frame at the end of a turn, a client's input_image) one node decodes at once, each in an ffmpeg process of its own (≈ 40 ms of a core each), shared fairly among API keys: one key holds at most all but one of them, and may have 4 more waiting; past that its pictures are refused with server_busy (a camera's turn goes on without its picture).",
    default: '2',
    parse: int(1, 32),
  },
  VISION_DECODE_TIMEOUT_MS: {
    doc: "How long one picture's decode may take before it is stopped: the client is told server_busy (the node was too busy, or the picture too heavy), a camera's turn goes on without its picture.",
    default: '5000',
    parse: int(10, 60000),
  },
  VISION_IMAGE_LONG_SIDE: { doc: "Long side, in pixels, of the JPEG a picture is scaled to for the model (and stored on the conversation's item).", default: '768', parse: int(64, 2048) },
  VISION_KEYFRAME_WAIT_MS: {
    doc: "How long the end of a turn waits for the key frame it asked the caller's camera for (RTCP PLI) before using the last key frame received, or none.",
    default: '400',
    parse: int(50, 5000),
  },
  LLM_TIMEOUT_MS: { doc: 'Timeout of the HTTP backends (LLM_BASE_URL, STT_URL, TTS_URL); a model reply that takes longer fails with an error event and a spoken apology.', default: '15000', parse: int(1000, 120000) },
  MODELS_FILE: {
    doc: 'A models file (YAML or JSON; docs/guides/models.md): the models calls may ask for, what runs each (offline, cascade, realtime), which API keys may use each, aliases, fallbacks and the default. Unset: the catalogue these settings describe (the built-in models, the LLM_BASE_URL cascade, the REALTIME_URL model). Checked at start; a problem names its line.',
    parse: str,
  },
  REALTIME_URL: { doc: "An upstream realtime model's WebSocket URL (the OpenAI Realtime protocol: wss://api.openai.com/v1/realtime, or another Parley's ws://host:port/v1/realtime); when set, REALTIME_MODEL joins the catalogue and becomes the default.", parse: str },
  REALTIME_API_KEY: { doc: 'Bearer key for REALTIME_URL (never logged, never sent to a client).', parse: str },
  REALTIME_MODEL: { doc: "The realtime model's id: the name clients ask for and the model sent upstream.", default: 'gpt-realtime', parse: str },
  REALTIME_DIALECT: { doc: "The upstream's protocol version: ga (OpenAI's GA interface) or beta (the preview interface, as Azure's older deployments speak it).", default: 'ga', parse: oneOf('ga', 'beta') },
  REALTIME_FALLBACK: { doc: "Models that take a call over when the realtime model fails, in order (comma-separated). Unset: the cascade when LLM_BASE_URL is set, else parley-offline.", parse: list },
  MODEL_CONNECT_TIMEOUT_MS: { doc: 'Time an upstream realtime model has to accept the connection and confirm the session; past it the call goes on with the fallback.', default: '5000', parse: int(500, 60_000) },
  MODEL_RESPONSE_TIMEOUT_MS: { doc: "Time an upstream realtime model has to start a reply it was asked for (its first event for the response); past it the call goes on with the fallback.", default: '10000', parse: int(1000, 120_000) },
  MODEL_BREAKER_FAILURES: { doc: "Failures in a row after which a model is not offered to new calls (its fallback takes them) for MODEL_BREAKER_COOLDOWN_MS.", default: '3', parse: int(1, 100) },
  MODEL_BREAKER_COOLDOWN_MS: { doc: "How long a model whose breaker opened is passed over before the next call tries it again.", default: '30000', parse: int(1000, 3_600_000) },
  STT_PROVIDER: {
    doc: 'Speech recogniser: pocketsphinx (built in, English) or http (STT_URL). Unset: http when STT_URL is set, else pocketsphinx.',
    parse: oneOf('pocketsphinx', 'http'),
  },
  STT_WORKERS: {
    doc: 'Worker processes running the built-in speech recogniser, started with the node and shared by every call (each holds its decoders, about 100 MB; about one per core is right).',
    default: '2',
    parse: int(1, 32),
  },
  STT_URL: { doc: 'OpenAI-compatible API base whose /audio/transcriptions the http recogniser calls (the turn as one WAV file).', parse: str },
  STT_API_KEY: { doc: 'Bearer key for STT_URL (never logged).', parse: str },
  STT_MODEL: { doc: 'Model name sent to STT_URL.', default: 'whisper-1', parse: str },
  TTS_PROVIDER: {
    doc: 'Speech synthesis: local (flite and espeak-ng) or http (TTS_URL). Unset: http when TTS_URL is set, else local.',
    parse: oneOf('local', 'http'),
  },
  TTS_PROCESSES: {
    doc: 'Local speech synthesis processes (flite, espeak-ng) the node runs at once, whatever the number of calls; further clauses wait their turn. Bounds what replies asked for in a burst can cost the other calls.',
    default: '4',
    parse: int(1, 64),
  },
  TTS_URL: { doc: 'OpenAI-compatible API base whose /audio/speech the http speech engine calls (the catalogue voice name as voice, response_format pcm: 24 kHz 16-bit mono, streamed).', parse: str },
  TTS_API_KEY: { doc: 'Bearer key for TTS_URL (never logged).', parse: str },
  TTS_MODEL: { doc: 'Model name sent to TTS_URL.', default: 'tts-1', parse: str },
  ECHO_DELAY_MS: { doc: "Delay before the audio-echo agent plays the caller's audio back.", default: '200', parse: int(0, 5000) },
  MCP_TIMEOUT_MS: {
    doc: "Time each request to a session's MCP server may take (connecting, listing its tools, one call of a tool); past it the listing or the call fails (mcp_list_tools.failed, response.mcp_call.failed) and the call goes on. MCP servers' addresses follow WEBHOOK_ALLOWED_CIDRS and WEBHOOK_DNS_SERVERS: no internal address unless allowed there, never Parley's own listeners, and each request goes to the address that was checked.",
    default: '10000',
    parse: int(100, 120_000),
  },
  MCP_MAX_OUTPUT_BYTES: {
    doc: "The most of an MCP tool's answer (its text, in bytes) kept for the model and the client; the rest is cut, saying so.",
    default: '16384',
    parse: int(256, 1024 * 1024),
  },
  MCP_MAX_RESPONSE_BYTES: {
    doc: "The most of each answer of a session's MCP server that is read (a page of its tool list, a tool's result), in bytes: past it the answer is not read further, and the listing or the call fails saying so (an error answer's body is read to 512 bytes). Keep it above MCP_MAX_OUTPUT_BYTES, which cuts what is kept of an answer read whole.",
    default: String(1024 * 1024),
    parse: int(64 * 1024, 64 * 1024 * 1024),
  },
} satisfies Record<string, Setting<unknown>>;
