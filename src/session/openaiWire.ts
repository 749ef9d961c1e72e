// OpenAI's Realtime (GA) wire shapes that both sides of the protocol share: Parley's own OpenAI door
// (calls/protocol) writes them to its clients, and the realtime bridge (agent/realtime) writes them
// to an upstream model and reads them back. One copy of each mapping: a session as its object, an
// item as the wire carries it and back, the audio formats.
import type { AudioEncoding } from '../media/audio/wireAudio.js';
import { imageDataUrl, newItemId, type ContentPart, type Item } from './conversation.js';
import type { Session } from './session.js';

/** OpenAI's audio format types and Parley's encodings of audio inside events. */
export const ENCODING_OF = { 'audio/pcm': 'pcm16', 'audio/pcmu': 'pcmu', 'audio/pcma': 'pcma' } as const;
export const FORMAT_OF = { pcm16: { type: 'audio/pcm', rate: 24000 }, pcmu: { type: 'audio/pcmu' }, pcma: { type: 'audio/pcma' } } as const satisfies Record<AudioEncoding, object>;

/** The session object OpenAI's clients read. */
export function openAiSessionObject(session: Session, id: string) {
  const td = session.turnDetection;
  const turnDetection =
    td.type === 'none'
      ? null
      : td.type === 'semantic_vad'
        ? { type: 'semantic_vad', eagerness: 'auto', create_response: td.createResponse, interrupt_response: td.interruptResponse }
        : {
            type: 'server_vad',
            threshold: td.threshold,
            prefix_padding_ms: td.prefixPaddingMs,
            silence_duration_ms: td.silenceMs,
            idle_timeout_ms: td.idleTimeoutMs,
            create_response: td.createResponse,
            interrupt_response: td.interruptResponse,
          };
  if (session.kind === 'transcription') {
    return {
      type: 'transcription',
      object: 'realtime.transcription_session',
      id,
      expires_at: 0,
      include: session.include ?? null,
      audio: {
        input: {
          format: FORMAT_OF[session.inputAudio ?? 'pcm16'],
          transcription: { model: 'parley', language: 'en', prompt: '' },
          noise_reduction: session.noiseReduction ? { type: session.noiseReduction } : null,
          turn_detection: turnDetection,
        },
      },
    };
  }
  return {
    type: 'realtime',
    object: 'realtime.session',
    id,
    model: session.model,
    output_modalities: session.outputModalities,
    instructions: session.instructions ?? '',
    tools: [
      ...session.tools.map((t) => ({ type: 'function', name: t.name, description: t.description ?? '', parameters: t.parameters ?? { type: 'object', properties: {} } })),
      // Headers hold credentials: never written back.
      ...(session.mcpServers ?? []).map((m) => ({
        type: 'mcp',
        server_label: m.label,
        server_url: m.url,
        allowed_tools: m.allowedTools ?? null,
        require_approval: typeof m.requireApproval === 'string' ? m.requireApproval : { never: { tool_names: m.requireApproval.never } },
        headers: null,
      })),
    ],
    tool_choice: typeof session.toolChoice === 'string' ? session.toolChoice : { type: 'function', name: session.toolChoice.name },
    max_output_tokens: session.maxOutputTokens ?? 'inf',
    tracing: null,
    prompt: null,
    truncation: 'auto',
    expires_at: 0,
    include: session.include ?? null,
    audio: {
      input: {
        format: FORMAT_OF[session.inputAudio ?? 'pcm16'],
        transcription: session.transcribeInput ? { model: 'parley' } : null,
        noise_reduction: session.noiseReduction ? { type: session.noiseReduction } : null,
        turn_detection: turnDetection,
      },
      output: { format: FORMAT_OF[session.outputAudio ?? 'pcm16'], voice: session.voice, speed: 1 },
    },
  };
}

/** An item as the wire carries it. */
export function wireItem(item: Item): Record<string, unknown> {
  const base = { id: item.id, object: 'realtime.item', type: item.type, status: item.status };
  switch (item.type) {
    case 'message':
      // A picture goes out as the JPEG kept of it (not the original the client sent).
      return { ...base, role: item.role, content: item.content.map((c) => (c.type === 'input_image' ? { type: 'input_image', image_url: imageDataUrl(c.image), detail: c.detail } : { ...c })) };
    case 'function_call':
      return { ...base, call_id: item.callId, name: item.name, arguments: item.arguments };
    case 'function_call_output':
      return { ...base, call_id: item.callId, output: item.output };
    case 'mcp_list_tools':
      return { id: item.id, type: item.type, server_label: item.serverLabel, tools: item.tools.map((t) => ({ name: t.name, description: t.description ?? null, input_schema: t.inputSchema, annotations: null })) };
    case 'mcp_call':
      return {
        id: item.id,
        type: item.type,
        server_label: item.serverLabel,
        name: item.name,
        arguments: item.arguments,
        approval_request_id: item.approvalRequestId,
        output: item.output,
        error: item.error === null ? null : { type: 'tool_execution_error', message: item.error },
      };
    case 'mcp_approval_request':
      return { id: item.id, type: item.type, server_label: item.serverLabel, name: item.name, arguments: item.arguments };
    case 'mcp_approval_response':
      return { id: item.id, type: item.type, approval_request_id: item.approvalRequestId, approve: item.approve, reason: item.reason };
  }
}

type Json = Record<string, any>;

/**
 * A wire content part in Parley's terms, read by its message's role (an assistant's text and audio
 * are output parts whatever the wire calls them: GA's output_audio, the beta's audio, a client's
 * text). Undefined for an input_image (a picture is decoded, not read) and for types Parley has none of.
 */
export function contentFromWire(role: string, c: Json): ContentPart | undefined {
  const assistant = role === 'assistant';
  if (c.type === 'input_text' || c.type === 'text' || c.type === 'output_text') {
    const text = typeof c.text === 'string' ? c.text : '';
    return assistant ? { type: 'output_text', text } : { type: 'input_text', text };
  }
  if (c.type === 'input_audio' || c.type === 'output_audio' || c.type === 'audio') {
    const transcript = typeof c.transcript === 'string' ? c.transcript : null;
    return assistant ? { type: 'output_audio', transcript } : { type: 'input_audio', transcript };
  }
  return undefined;
}

const STATUSES = new Set(['in_progress', 'completed', 'incomplete']);
const ROLES = new Set(['user', 'assistant', 'system']);

/**
 * An item off the wire in Parley's terms (a client's, or an upstream model's), its pictures left
 * out; undefined for an item type Parley does not keep (MCP listings and calls an upstream made).
 */
export function itemFromWire(w: Json): Item | undefined {
  const id = typeof w.id === 'string' && w.id ? w.id : newItemId();
  const status = STATUSES.has(w.status) ? (w.status as 'in_progress' | 'completed' | 'incomplete') : 'completed';
  const str = (v: unknown) => (typeof v === 'string' ? v : '');
  switch (w.type ?? 'message') {
    case 'message': {
      const role = ROLES.has(w.role) ? (w.role as 'user' | 'assistant' | 'system') : undefined;
      if (!role) return undefined;
      const content = (Array.isArray(w.content) ? (w.content as Json[]) : []).flatMap((c) => contentFromWire(role, c) ?? []);
      return { id, type: 'message', role, status, content };
    }
    case 'function_call':
      return { id, type: 'function_call', status, callId: str(w.call_id), name: str(w.name), arguments: str(w.arguments) };
    case 'function_call_output':
      return { id, type: 'function_call_output', status: 'completed', callId: str(w.call_id), output: str(w.output) };
    case 'mcp_approval_response':
      return { id, type: 'mcp_approval_response', status: 'completed', approvalRequestId: str(w.approval_request_id), approve: w.approve === true, reason: typeof w.reason === 'string' ? w.reason : null };
    default:
      return undefined;
  }
}
