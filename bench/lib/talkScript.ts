// A talking caller for the load generator: says a pre-encoded question, stays silent (pre-encoded
// silence, as a browser's microphone sends) while the agent answers, and asks again once the answer
// is over. Voice-to-voice is timed at the caller, from the end of its speech (the question's last
// loud sample) to the first loud 20 ms of the agent's answer — the only decoding the load generator
// does, and only for talking calls. With a period, a question starts every `periodMs` (or once the
// answer is over, if later): most of the time the caller listens; with an infinite period it never
// asks (a listening call).
import { Decoder, Encoder } from '@evan/opus';
import { speak } from '../../test/helpers/speech.ts';

/** The question, encoded once for every talking call. */
export interface Question {
  ptimeMs: number;
  speech: Buffer[];
  silence: Buffer[];
  /** From the first speech packet's departure to the question's last loud sample. */
  speechMs: number;
  /** The question as spoken, 48 kHz. */
  pcm: Int16Array;
}

const LOUD_SAMPLE = 500;
const LOUD_FRAME_RMS = 300;
/** The answer is over once the agent has sent nothing for this long. */
const ANSWER_OVER_MS = 600;
const PAUSE_BEFORE_NEXT_QUESTION_MS = 500;
const NO_ANSWER_MS = 10_000;

export function buildQuestion(text: string, ptimeMs: number): Question {
  const pcm = speak(text);
  let last = pcm.length;
  while (last > 0 && Math.abs(pcm[last - 1]!) < LOUD_SAMPLE) last--;
  const frame = ptimeMs * 48;
  const encoder = new Encoder({ channels: 1, sample_rate: 48_000, application: 'voip' });
  encoder.bitrate = 32_000;
  const speech: Buffer[] = [];
  for (let i = 0; i < pcm.length; i += frame) {
    const chunk = new Int16Array(frame);
    chunk.set(pcm.subarray(i, i + frame));
    speech.push(Buffer.from(encoder.encode(chunk)));
  }
  const silence = Array.from({ length: 50 }, () => Buffer.from(encoder.encode(new Int16Array(frame))));
  return { ptimeMs, speech, silence, speechMs: last / 48, pcm };
}

export class TalkScript {
  private speaking = -1;
  private silenceIndex = 0;
  private speechEndAt = Number.NaN;
  private answerStartedAt = Number.NaN;
  private lastAgentPacketAt = Number.NaN;
  private nextQuestionAt: number;
  private readonly decoder = new Decoder({ channels: 1, sample_rate: 48_000 });
  /** Voice-to-voice of each answered question since the last take(), ms. */
  private latencies: number[] = [];
  unanswered = 0;

  /** When the question being asked (or the last one) started. */
  private askedAt = Number.NaN;

  constructor(
    private readonly question: Question,
    startAt: number,
    /** From one question's start to the next's; 0: the next as soon as the answer is over. */
    private readonly periodMs = 0,
  ) {
    this.nextQuestionAt = startAt;
  }

  get ptimeMs(): number {
    return this.question.ptimeMs;
  }

  next(now: number): Buffer {
    if (this.speaking < 0 && now >= this.nextQuestionAt) {
      this.speaking = 0;
      this.askedAt = now;
      this.speechEndAt = now + this.question.speechMs;
      this.answerStartedAt = Number.NaN;
      this.nextQuestionAt = Number.POSITIVE_INFINITY;
    }
    if (this.speaking >= 0) {
      const packet = this.question.speech[this.speaking++]!;
      if (this.speaking === this.question.speech.length) this.speaking = -1;
      return packet;
    }
    this.checkAnswerOver(now);
    const packet = this.question.silence[this.silenceIndex]!;
    this.silenceIndex = (this.silenceIndex + 1) % this.question.silence.length;
    return packet;
  }

  /** A packet of the agent's audio arrived. */
  heard(payload: Buffer, now: number): void {
    this.lastAgentPacketAt = now;
    if (!Number.isNaN(this.answerStartedAt) || !(now > this.speechEndAt)) return;
    let pcm: Uint8Array;
    try {
      pcm = this.decoder.decode(payload);
    } catch {
      return;
    }
    const samples = new Int16Array(pcm.buffer, pcm.byteOffset, pcm.byteLength >> 1);
    let sum = 0;
    for (const s of samples) sum += s * s;
    if (Math.sqrt(sum / samples.length) <= LOUD_FRAME_RMS) return;
    this.answerStartedAt = now;
    this.latencies.push(now - this.speechEndAt);
  }

  private checkAnswerOver(now: number): void {
    if (this.nextQuestionAt !== Number.POSITIVE_INFINITY) return;
    const answered = !Number.isNaN(this.answerStartedAt) && now - this.lastAgentPacketAt > ANSWER_OVER_MS;
    const gaveUp = Number.isNaN(this.answerStartedAt) && now - this.speechEndAt > NO_ANSWER_MS;
    if (gaveUp) this.unanswered++;
    if (answered || gaveUp) this.nextQuestionAt = Math.max(now + PAUSE_BEFORE_NEXT_QUESTION_MS, this.askedAt + this.periodMs);
  }

  take(): number[] {
    const l = this.latencies;
    this.latencies = [];
    return l;
  }
}
