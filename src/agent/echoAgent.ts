// The built-in `audio-echo` agent: plays the caller's audio back after a short delay. For tests and
// for measuring the media path's latency without any speech processing in the way.
import { FRAME_SAMPLES } from '../media/audio/format.js';
import type { Agent, AgentContext, AgentFactory } from './types.js';

export class EchoAgent implements Agent {
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

  onUserText(text: string): void {
    this.ctx.emit({ type: 'response.output_item.done', text });
  }

  onParamsUpdate(): void {}

  cancel(): void {
    this.ctx.audio.clear();
    this.primed = false;
  }

  close(): void {}
}

export function echoAgentFactory(delayMs = 200): AgentFactory {
  return { create: (ctx) => new EchoAgent(ctx, delayMs) };
}
