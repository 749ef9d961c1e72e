// The built-in `audio-echo` agent: plays the caller's audio back after a short delay. For tests and
// for measuring the media path's latency without any speech processing in the way. A reply asked
// for in text repeats the last user text.
import { randomId } from '../system/ids.js';
import { FRAME_SAMPLES, SAMPLE_RATE } from '../media/audio/format.js';
import { itemText, newItemId, type MessageItem } from '../session/conversation.js';
import type { Agent, AgentContext, AgentFactory, Refusal } from './types.js';

export class EchoAgent implements Agent {
  /** It plays back what it hears: the call's own rate, untouched. */
  readonly inputSampleRate = SAMPLE_RATE;
  private primed = false;

  constructor(
    private readonly ctx: AgentContext,
    private readonly delayMs: number,
  ) {}

  onAudio(frame: Int16Array): void {
    if (!this.primed) {
      // The delay is a run of silence ahead of the first echoed frame; the queue then stays that long.
      this.ctx.audio.write(new Int16Array(Math.round((this.delayMs / 20) * FRAME_SAMPLES)));
      this.primed = true;
    }
    this.ctx.audio.write(frame);
  }

  onSessionUpdate(): void {}

  createResponse(): Refusal {
    const { ctx } = this;
    const lastUser = [...ctx.conversation.items].reverse().find((i) => i.type === 'message' && i.role === 'user');
    const text = lastUser ? itemText(lastUser) : '';
    const id = randomId('resp_', 12);
    const item: MessageItem = { id: newItemId(), type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] };
    const base = { id, inConversation: true, metadata: null };
    ctx.emit({ type: 'response.created', response: { ...base, status: 'in_progress', output: [] } });
    const placed = ctx.conversation.add(item);
    const previousItemId = placed.ok ? placed.previousItemId : null;
    ctx.emit({ type: 'item.added', item, previousItemId });
    ctx.emit({ type: 'response.output_item.added', responseId: id, outputIndex: 0, item });
    ctx.emit({ type: 'response.text.done', responseId: id, itemId: item.id, outputIndex: 0, audio: false, text });
    ctx.emit({ type: 'response.output_item.done', responseId: id, outputIndex: 0, item });
    ctx.emit({ type: 'item.done', item, previousItemId });
    ctx.emit({ type: 'response.done', response: { ...base, status: 'completed', output: [item] } });
    return { ok: true };
  }

  cancelResponse(): boolean {
    this.clearOutputAudio();
    return false;
  }

  clearOutputAudio(): void {
    this.ctx.audio.clear();
    this.primed = false;
  }

  commitInput(): Refusal {
    return { ok: false, code: 'input_audio_buffer_commit_empty', message: 'The audio-echo model keeps no input buffer.' };
  }

  clearInput(): void {}

  close(): void {}
}

export function echoAgentFactory(delayMs = 200): AgentFactory {
  return { create: (ctx) => new EchoAgent(ctx, delayMs) };
}
