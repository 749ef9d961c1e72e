// A call's trace: a span for the call, and one per turn of the caller's, from the end of their
// speech to the first packet of the reply, with a child for each stage in between. The stages'
// times are the ones the call's figures are measured with (performance.now()), so the spans say
// what response.audio.started's timings and the voice-to-voice metric say; each child begins where
// the one before it ended, so together they are the turn.
import { SpanKind, SpanStatusCode, type Attributes, type Span } from '@opentelemetry/api';
import { childParent, failSpan, logFieldsOf, type SpanParent, type TraceLogFields } from './tracing.js';

/**
 * A turn's stages, in order; each ends where the next begins. end_of_speech: from the caller's
 * last speech to the end of the turn being certain (the end-of-turn silence); recognition: to the
 * words being known; first_token: to the reply's first token; first_audio: to its first audio
 * queued for the caller (synthesis); first_packet: to the first packet of it leaving.
 */
export const TURN_STAGES = ['end_of_speech', 'recognition', 'first_token', 'first_audio', 'first_packet'] as const;
export type TurnStage = (typeof TURN_STAGES)[number];

/** performance.now() times to wall-clock milliseconds, anchored once per call (every span of it agrees). */
type Clock = (at: number) => number;

/** One turn's span and its stages, as they are reached. */
export class TurnTrace {
  readonly parent: SpanParent;
  private readonly marks = new Map<TurnStage, number>();
  private ended = false;

  constructor(
    private readonly span: Span,
    callParent: SpanParent,
    private readonly startAt: number,
    private readonly clock: Clock,
    private readonly onEnd: (turn: TurnTrace) => void,
  ) {
    this.parent = childParent(callParent, span);
  }

  /** `stage` ended at `at` (performance.now()); the first time counts. */
  reached(stage: TurnStage, at: number): void {
    if (!this.ended && !this.marks.has(stage)) this.marks.set(stage, at);
  }

  has(stage: TurnStage): boolean {
    return this.marks.has(stage);
  }

  set(attributes: Attributes): void {
    if (!this.ended) this.span.setAttributes(attributes);
  }

  /** What the caller said: on the span only when the operator allows words in spans. */
  words(transcript: string): void {
    if (this.parent.content) this.set({ 'parley.turn.transcript': transcript });
  }

  /** The turn is over at its last stage reached (`outcome`: replied, or why there was no reply). */
  end(outcome = 'replied'): void {
    this.finish(outcome, undefined);
  }

  /**
   * The turn stops now, inside the stage under way (cut short: `outcome` says why, `err` when it
   * failed): that stage's span ends here, marked unfinished.
   */
  abandon(outcome: string, err?: unknown): void {
    this.finish(outcome, { at: performance.now(), err });
  }

  private finish(outcome: string, cut: { at: number; err: unknown } | undefined): void {
    if (this.ended) return;
    this.ended = true;
    let last = -1;
    TURN_STAGES.forEach((s, i) => void (this.marks.has(s) && (last = i)));
    let from = this.startAt;
    for (let i = 0; i <= last; i++) {
      const stage = TURN_STAGES[i]!;
      // A stage that took no time of its own (prepared while the caller spoke) is a child of none.
      const to = Math.max(from, this.marks.get(stage) ?? from);
      this.child(stage, from, to);
      from = to;
    }
    const unfinished = TURN_STAGES[last + 1];
    if (cut && unfinished && cut.at > from) {
      this.child(unfinished, from, cut.at, { 'parley.stage.completed': false }, cut.err);
      from = cut.at;
    }
    this.span.setAttribute('parley.turn.outcome', outcome);
    if (cut?.err !== undefined) this.span.setStatus({ code: SpanStatusCode.ERROR, message: outcome });
    this.span.end(this.clock(from));
    this.onEnd(this);
  }

  private child(stage: TurnStage, from: number, to: number, attributes: Attributes = {}, err?: unknown): void {
    const span = this.parent.tracer.startSpan(`turn.${stage}`, { startTime: this.clock(from), attributes }, this.parent.context);
    if (err !== undefined) failSpan(span, err);
    span.end(this.clock(to));
  }
}

/** What a call's span is told; a call not traced gets NO_CALL_TRACE, which does nothing. */
export interface CallTrace {
  /** The parent of the call's spans outside its turns (a reply the client asked for, a prepared reply). */
  readonly parent: SpanParent | undefined;
  readonly logFields: TraceLogFields;
  /** A turn of the caller's, its span starting when their speech ended; undefined when not traced. */
  turn(itemId: string, voiceEndedAt: number): TurnTrace | undefined;
  set(attributes: Attributes): void;
  event(name: string, attributes?: Attributes): void;
  /** The call is over: turns still open stop here, then its span ends (an error when it failed). */
  end(failed: boolean, attributes: Attributes): void;
}

export const NO_CALL_TRACE: CallTrace = { parent: undefined, logFields: {}, turn: () => undefined, set() {}, event() {}, end() {} };

/** A call's span under `root` (a span that begins a trace). */
export function startCallTrace(root: SpanParent | undefined, attributes: Attributes): CallTrace {
  if (!root) return NO_CALL_TRACE;
  const span = root.tracer.startSpan('call', { kind: SpanKind.SERVER, attributes }, root.context);
  if (!span.isRecording()) return NO_CALL_TRACE;
  const anchor = Date.now() - performance.now();
  const clock: Clock = (at) => anchor + at;
  const parent = childParent(root, span);
  const open = new Set<TurnTrace>();
  let ended = false;
  return {
    parent,
    logFields: logFieldsOf(span),
    turn(itemId, voiceEndedAt) {
      if (ended) return undefined;
      const turnSpan = parent.tracer.startSpan('turn', { startTime: clock(voiceEndedAt), attributes: { 'parley.turn.item_id': itemId } }, parent.context);
      const turn = new TurnTrace(turnSpan, parent, voiceEndedAt, clock, (t) => open.delete(t));
      open.add(turn);
      return turn;
    },
    set: (a) => void (!ended && span.setAttributes(a)),
    event: (name, a) => void (!ended && span.addEvent(name, a)),
    end(failed, a) {
      if (ended) return;
      for (const turn of [...open]) turn.abandon('call_ended');
      ended = true;
      span.setAttributes(a);
      if (failed) span.setStatus({ code: SpanStatusCode.ERROR, message: String(a['parley.call.end_reason'] ?? 'failed') });
      span.end();
    },
  };
}

