// `echo`: repeats the caller's last words (tests, and checking the speech pipeline end to end).
import { lastUserText } from './messages.js';
import type { ReplyModel, ReplyRequest } from './types.js';

export const echoModel: ReplyModel = {
  name: 'echo',
  async *reply(req: ReplyRequest) {
    yield { type: 'text', delta: lastUserText(req.messages) };
  },
};
