// The beta dialect of OpenAI's Realtime protocol, which most phone bridges and older plugins still
// speak (`OpenAI-Beta: realtime=v1`): the one protocol (openai.ts) with its messages translated at
// the edge — event names (response.audio.delta, conversation.item.created…), the flat session object
// (modalities, voice, input_audio_format: "g711_ulaw"…, no `type`), and assistant content types.
import { fromBeta, toBeta } from '../../session/openaiBeta.js';
import { MAX_MESSAGE_BYTES } from './message.js';
import type { ProtocolFactory } from './types.js';

type Json = Record<string, any>;

/**
 * The server events of Azure OpenAI's realtime preview (api-version 2024-10-01-preview), the only
 * ones its clients take: rt-client ends its session on any other (conversation.created, the input
 * transcription deltas added later, Parley's own parley.* events).
 */
export const AZURE_PREVIEW_EVENTS: ReadonlySet<string> = new Set([
  'error',
  'session.created',
  'session.updated',
  'input_audio_buffer.committed',
  'input_audio_buffer.cleared',
  'input_audio_buffer.speech_started',
  'input_audio_buffer.speech_stopped',
  'conversation.item.created',
  'conversation.item.truncated',
  'conversation.item.deleted',
  'conversation.item.input_audio_transcription.completed',
  'conversation.item.input_audio_transcription.failed',
  'response.created',
  'response.done',
  'response.output_item.added',
  'response.output_item.done',
  'response.content_part.added',
  'response.content_part.done',
  'response.text.delta',
  'response.text.done',
  'response.audio_transcript.delta',
  'response.audio_transcript.done',
  'response.audio.delta',
  'response.audio.done',
  'response.function_call_arguments.delta',
  'response.function_call_arguments.done',
  'rate_limits.updated',
]);

/**
 * The beta dialect over a GA protocol: the same protocol, its messages translated both ways;
 * `only`: the server events sent (a client that refuses any other).
 */
export { fromBeta, toBeta };

export function betaDialect(ga: ProtocolFactory, only?: ReadonlySet<string>): ProtocolFactory {
  return (control, send) => {
    const inner = ga(control, (message) => {
      const beta = toBeta(message as Json);
      if (beta && (!only || only.has(beta.type))) send(beta);
    });
    return {
      opened: () => inner.opened(),
      receive: (text) => {
        // Only an append may be this large, and it reads the same in both dialects: not parsed twice.
        if (text.length > MAX_MESSAGE_BYTES) return inner.receive(text);
        let message: unknown;
        try {
          message = JSON.parse(text);
        } catch {
          return inner.receive(text); // the protocol answers bad JSON itself
        }
        inner.receive(message && typeof message === 'object' && !Array.isArray(message) ? JSON.stringify(fromBeta(message as Json)) : text);
      },
      deliver: (event) => inner.deliver(event),
      ended: (reason) => inner.ended(reason),
    };
  };
}
