// A call's span, as an observer of the call: its door, model and key from the start (callManager.ts),
// when it connected, a change of model, and at its end how it ended and what it used.
import type { CallTrace } from '../observability/callTrace.js';
import type { CallObserver } from './call.js';

export function callTracing(trace: CallTrace, model: string): CallObserver {
  let current = model;
  return {
    connected: (call) => trace.event('connected', { 'parley.call.transport': call.transportKind }),
    sessionChanged: (_call, session) => {
      if (session.model === current) return;
      trace.event('model_changed', { 'parley.call.model.from': current, 'parley.call.model.to': session.model });
      current = session.model;
      trace.set({ 'parley.call.model': current });
    },
    ended: (call) => {
      const { usage, quality } = call.figures();
      trace.end(call.state === 'failed', {
        'parley.call.state': call.state,
        'parley.call.end_reason': call.endReason ?? 'unknown',
        'parley.call.caller_audio_s': usage.caller_audio_s,
        'parley.call.agent_audio_s': usage.agent_audio_s,
        'parley.call.input_tokens': usage.input_tokens,
        'parley.call.output_tokens': usage.output_tokens,
        ...(quality ? { 'parley.call.time_to_connected_ms': quality.time_to_connected_ms } : {}),
      });
    },
  };
}
