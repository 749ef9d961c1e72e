// `echo`: repeats the caller's words (tests, and checking the speech pipeline end to end).
import type { ReplyModel, ReplyRequest } from './types.js';

export const echoModel: ReplyModel = {
  async *reply(req: ReplyRequest) {
    yield req.text;
  },
};
