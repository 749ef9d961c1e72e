// A recorded call: the recorder listens to the call's audio from its connection to its end, and the
// conversation's record says how the recording went. A recording that fails is logged and the
// call goes on.
import type { FastifyBaseLogger } from 'fastify';
import type { CallRecorder } from '../recordings/callRecorder.js';
import type { ConversationStore } from '../storage/conversations.js';
import type { CallObserver } from './call.js';

export function recordingObserver(recorder: CallRecorder, store: ConversationStore, log: FastifyBaseLogger): CallObserver {
  return {
    connected: () => recorder.start(),
    callerAudio: (_call, frame, rate) => recorder.callerAudio(frame, rate),
    agentAudio: (_call, pcm) => recorder.agentAudio(pcm),
    ended: async (call) => {
      const outcome = await recorder.finish();
      await store.setRecording(call.id, outcome).catch((err: Error) => log.error({ err, conversation: call.id }, 'recording state not recorded'));
    },
  };
}
