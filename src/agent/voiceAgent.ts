// The voice agent: composes the stages — turn detection, streaming recognition, a reply model and
// the speaker — into turns and replies. It owns what happens between them: when a turn becomes a
// user item, when a reply starts, barge-in, playback events and the idle prompt. Each reply is a
// Reply (reply.ts); the conversation belongs to the call. The caller's audio reaches the stages
// through its Ears (ears.ts): the echo guard, and the session's noise suppression.
// Its collaborators in voice/: the camera's pictures, the idle prompt, first-packet tracking.
import type { StillImage } from '../media/stillImage.js';
import type { VideoFrameInfo } from '../media/videoReceiver.js';
import { newItemId, type MessageItem } from '../session/conversation.js';
import type { TurnTrace } from '../observability/callTrace.js';
import type { StageTimings } from '../session/events.js';
import type { Session } from '../session/session.js';
import type { ReplyModel } from './llm/types.js';
import { Ears } from './ears.js';
import type { McpConnector } from './mcp/connector.js';
import { McpHub } from './mcp/hub.js';
import { Reply } from './reply.js';
import type { VoiceStages } from './stages.js';
import type { RecognitionStream } from './stt/types.js';
import type { EndpointingOptions, TurnDetector } from './turn/types.js';
import { CameraPictures, withPicture, type CameraPicturesDeps } from './voice/cameraPictures.js';
import { FirstPacket } from './voice/firstPacket.js';
import { IdlePrompt } from './voice/idlePrompt.js';
import type { Agent, AgentContext, AgentFactory, Refusal, ResponseRequest } from './types.js';

export interface VoiceAgentDeps extends CameraPicturesDeps {
  stages: VoiceStages;
  /** The reply model the session's model runs. */
  modelFor(session: Session): ReplyModel;
  /** Stage timings of each reply with audio (metrics). */
  onTimings?(model: string, timings: StageTimings): void;
  /**
   * Silence inside a turn after which the reply is prepared unseen, so it is ready when the turn's
   * end is certain (and dropped if the caller goes on); 0: replies start at the end of the turn.
   */
  prepareReplyAfterMs?: number;
  /** Connects to the MCP servers sessions name (absent: MCP tools fail to list, saying so). */
  mcp?: McpConnector;
}

/** A caller's turn in progress. */
interface Turn {
  itemId: string;
  /** The recognition the caller's audio feeds now. */
  recognition: RecognitionStream;
  /** Transcripts of the parts recognised before each pause, in order. */
  parts: Promise<string>[];
  /** Silent since a pause, and not spoken again. */
  paused: boolean;
  /** The reply prepared during the pause, and the transcript it answers. */
  prepared?: { reply: Reply; transcript: string };
  /** The camera's picture for this turn, asked for at its first pause or at its end. */
  picture?: Promise<StillImage | undefined>;
  /** The transcript sent so far as deltas (recognised parts; the completed transcript extends it). */
  said: string;
  /** Abandoned (a new turn started, the input was cleared): its parts send no deltas. */
  dropped: boolean;
  /** Settles once the parts recognised so far have been said. */
  saying: Promise<void>;
}

const joinParts = (texts: string[]) => texts.map((t) => t.trim()).filter(Boolean).join(' ');

/** What the VAD and the recogniser hear (the transport converts the caller's audio at its edge). */
const INPUT_RATE = 16_000;

export class VoiceAgent implements Agent {
  readonly inputSampleRate = INPUT_RATE;
  private session: Session;
  private detector: TurnDetector | undefined;
  private turn: Turn | undefined;
  /** Audio since the last commit when turns are not detected (turn_detection none). */
  private manual: Turn | undefined;
  private reply: Reply | undefined;
  /** Milliseconds of the caller's audio so far (the clock of audio_start_ms / audio_end_ms). */
  private inputMs = 0;
  /** The reply whose audio is on the wire, while it plays. */
  private playing: Reply | undefined;
  /** With idle_timeout_ms, silence after the agent spoke prompts a reply (idlePrompt.ts). */
  private readonly idlePrompt = new IdlePrompt({
    idleMs: () => this.session.turnDetection.idleTimeoutMs,
    inputMs: () => this.inputMs,
    quiet: () => !this.turn && !this.reply,
    prompt: (fromMs, toMs) => {
      this.ctx.emit({ type: 'input.timeout_triggered', audioStartMs: Math.round(fromMs), audioEndMs: Math.round(toMs) });
      this.startReply({}, {});
    },
  });
  /** The traced turn whose reply's first packet is awaited (firstPacket.ts). */
  private readonly firstPacket = new FirstPacket();
  private readonly unsubscribePlayback: () => void;
  private closed = false;
  /** The call's context, its audio out watched by the echo guard. */
  private readonly ctx: AgentContext;
  private readonly ears = new Ears(INPUT_RATE);
  /** The camera's pictures for the caller's turns (cameraPictures.ts). */
  private readonly pictures: CameraPictures;
  /** The session's MCP servers, listed and called. */
  private readonly mcp: McpHub;
  /**
   * Transcriptions under way (committed turns, audio items): a reply started now answers the
   * conversation once they are done, as OpenAI answers the committed audio (push-to-talk clients
   * send commit and response.create together).
   */
  private readonly transcribing = new Set<Promise<void>>();

  constructor(
    ctx: AgentContext,
    private readonly deps: VoiceAgentDeps,
  ) {
    this.ctx = { ...ctx, audio: this.ears.watch(ctx.audio) };
    this.session = ctx.session();
    this.pictures = new CameraPictures(ctx, deps);
    this.mcp = new McpHub(this.ctx, deps.mcp);
    this.mcp.sync(this.session.mcpServers ?? []);
    this.setUpNoiseReduction();
    this.setUpTurnDetection();
    // A playback cut short was ended by whoever cleared it (stopReply).
    this.unsubscribePlayback = ctx.audio.onPlayback({
      playbackStarted: () => this.firstPacket.playbackStarted(),
      playbackFinished: ({ interrupted }) => {
        if (!interrupted) this.checkPlaybackEnded();
      },
    });
  }

  onAudio(frame: Int16Array, capturedAt?: number): void {
    this.inputMs += (frame.length * 1000) / INPUT_RATE;
    const heard = this.ears.hear(frame, capturedAt);
    if (this.detector) this.detector.push(heard);
    else if (this.session.turnDetection.type === 'none') {
      this.manual ??= this.startTurn();
      this.manual.recognition.write(this.ears.forRecognizer(heard));
    }
  }

  decodeImage(bytes: Buffer): Promise<StillImage> {
    return this.pictures.decodeImage(bytes);
  }

  onVideoFrame(frame: VideoFrameInfo): void {
    this.pictures.onFrame(frame);
  }

  onSessionUpdate(session: Session): void {
    const before = this.session;
    this.session = session;
    if (before.mcpServers !== session.mcpServers) this.mcp.sync(session.mcpServers ?? []);
    if (before.noiseReduction !== session.noiseReduction) this.setUpNoiseReduction();
    if ((before.turnDetection.type === 'none') !== (session.turnDetection.type === 'none')) this.setUpTurnDetection();
    else this.detector?.configure(this.endpointing());
  }

  /** The session's noise suppression, started anew when its type changes (none: the audio as it came). */
  private setUpNoiseReduction(): void {
    this.ears.suppressWith(undefined);
    const type = this.session.noiseReduction;
    if (!type) return;
    try {
      this.ears.suppressWith(this.deps.stages.noiseSuppressor(type));
    } catch (err) {
      // The call goes on with the audio as it came.
      this.ctx.emit({ type: 'stage.failed', stage: 'noise_reduction', code: 'noise_reduction_failed', message: `Noise suppression could not start: ${(err as Error).message}`, recoverable: true, cause: err as Error });
    }
  }

  private endpointing(): EndpointingOptions {
    const td = this.session.turnDetection;
    const prepare = this.deps.prepareReplyAfterMs ?? 0;
    // A reply is prepared only when the turn's end will start one, and before that end comes; a
    // transcription session's pauses send what was said so far (deltas).
    const pausing = td.createResponse || this.session.kind === 'transcription';
    const pauseMs = pausing && prepare > 0 && prepare < td.silenceMs ? prepare : undefined;
    return { threshold: td.threshold, prefixPaddingMs: td.prefixPaddingMs, silenceMs: td.silenceMs, ...(pauseMs ? { pauseMs } : {}) };
  }

  createResponse(request: ResponseRequest = {}): Refusal {
    if (this.session.kind === 'transcription') {
      return { ok: false, code: 'invalid_value', message: 'A transcription session transcribes the caller and makes no responses.' };
    }
    if (this.reply?.generating) {
      return { ok: false, code: 'conversation_already_has_active_response', message: `Response ${this.reply.id} is in progress; cancel it or wait for response.done.` };
    }
    this.startReply(request, {});
    return { ok: true };
  }

  cancelResponse(): boolean {
    const reply = this.reply;
    if (!reply?.generating) return false;
    this.stopReply(reply, 'client_cancelled');
    return true;
  }

  clearOutputAudio(): void {
    const reply = this.playing ?? this.reply;
    const wasPlaying = !!this.playing;
    if (reply) this.stopReply(reply, 'client_cancelled');
    else this.ctx.audio.clear();
    // The client is told its request was done even when nothing was playing.
    if (!wasPlaying) this.ctx.emit({ type: 'output_audio.cleared', responseId: reply?.id ?? null });
  }

  commitInput(): Refusal {
    const turn = this.manual;
    if (!turn) return { ok: false, code: 'input_audio_buffer_commit_empty', message: 'There is no audio to commit.' };
    this.manual = undefined;
    this.track(this.finishTurn(turn, this.inputMs, this.inputMs, performance.now(), true));
    return { ok: true };
  }

  transcribeItem(itemId: string, pcm: Int16Array): void {
    const recognition = this.deps.stages.recognizer.start();
    recognition.write(this.ears.forRecognizer(pcm));
    const { ctx } = this;
    const transcribed = recognition.finish(ctx.trace?.parent).then(
      (text) => {
        const transcript = text.trim();
        const item = ctx.conversation.get(itemId);
        if (this.closed || item?.type !== 'message') return;
        const part = item.content.find((c) => c.type === 'input_audio');
        if (part?.type === 'input_audio') part.transcript = transcript;
        if (!this.session.transcribeInput) return;
        if (transcript) ctx.emit({ type: 'transcription.delta', itemId, delta: transcript });
        ctx.emit({ type: 'transcription.completed', itemId, transcript });
      },
      (err: Error) => {
        if (!this.closed) ctx.emit({ type: 'transcription.failed', itemId, message: err.message });
      },
    );
    this.track(transcribed);
  }

  /** A transcription under way, until it is done. */
  private track(transcription: Promise<void>): void {
    this.transcribing.add(transcription);
    void transcription.finally(() => this.transcribing.delete(transcription));
  }

  clearInput(): void {
    this.turn?.prepared?.reply.discard();
    for (const turn of [this.manual, this.turn]) {
      turn?.recognition.abort();
      if (turn) turn.dropped = true;
    }
    this.manual = undefined;
    this.turn = undefined;
    this.detector?.reset();
    this.ctx.emit({ type: 'input.cleared' });
  }

  close(): void {
    this.closed = true;
    this.unsubscribePlayback();
    this.idlePrompt.close();
    this.firstPacket.close();
    // A reply still being generated is cut where the caller stopped hearing it; one fully
    // generated was not interrupted, and is kept whole.
    if (this.reply?.generating) this.reply.stop('client_cancelled');
    else (this.playing ?? this.reply)?.playbackEnded();
    this.turn?.prepared?.reply.discard();
    for (const turn of [this.manual, this.turn]) turn?.recognition.abort();
    this.detector?.close();
    this.detector = undefined;
    this.ears.close();
    this.pictures.close();
    this.mcp.close();
  }

  private setUpTurnDetection(): void {
    this.detector?.close();
    this.detector = undefined;
    if (this.session.turnDetection.type === 'none') return;
    this.detector = this.deps.stages.turnDetector(this.endpointing(), {
      speechStarted: (audioStartMs, preroll) => this.onSpeechStarted(audioStartMs, preroll),
      speech: (pcm) => this.turn?.recognition.write(this.ears.forRecognizer(pcm)),
      speechPaused: () => this.onSpeechPaused(),
      speechResumed: () => this.onSpeechResumed(),
      speechStopped: (audioEndMs, speechEndMs) => {
        const turn = this.turn;
        this.turn = undefined;
        if (turn) this.track(this.finishTurn(turn, audioEndMs, speechEndMs, performance.now(), false));
      },
      error: (err) => {
        // The window counts as silence and detection goes on.
        this.ctx.emit({ type: 'stage.failed', stage: 'vad', code: 'vad_failed', message: `Voice activity detection failed: ${err.message}`, recoverable: true, cause: err });
      },
    });
  }

  private startTurn(): Turn {
    return { itemId: newItemId(), recognition: this.deps.stages.recognizer.start(), parts: [], paused: false, said: '', dropped: false, saying: Promise.resolve() };
  }

  /**
   * A part of the turn was recognised (at a pause): its words go out as a transcription delta. Deltas
   * append — their concatenation is the completed transcript, as OpenAI's — so only final words are
   * sent (a recogniser's partial guesses are revised, e.g. "what time is it" → "what time it now"):
   * each part as it is recognised, the rest when the turn ends.
   */
  private sayPart(turn: Turn, text: string): void {
    const words = text.trim();
    if (!words || turn.dropped || this.closed || !this.session.transcribeInput) return;
    const delta = turn.said ? ` ${words}` : words;
    turn.said += delta;
    this.ctx.emit({ type: 'transcription.delta', itemId: turn.itemId, delta });
  }

  private onSpeechStarted(audioStartMs: number, preroll: Int16Array): void {
    this.idlePrompt.cancel();
    this.turn?.recognition.abort();
    this.turn?.prepared?.reply.discard();
    if (this.turn) this.turn.dropped = true;
    this.turn = this.startTurn();
    this.pictures.turnDone();
    this.ctx.emit({ type: 'input.speech_started', itemId: this.turn.itemId, audioStartMs: Math.round(audioStartMs) });
    if (this.session.turnDetection.interruptResponse) this.interrupt();
    this.ears.turnStarts(audioStartMs);
    this.turn.recognition.write(this.ears.forRecognizer(preroll));
  }

  /**
   * The caller fell silent inside the turn: what was said so far is recognised now, and the reply to
   * it prepared unseen, so that if the silence becomes the turn's end the reply is ready.
   */
  private onSpeechPaused(): void {
    const turn = this.turn;
    if (!turn || turn.paused) return;
    turn.paused = true;
    // Recognised before the turn is over (and has a span): the request's span is the call's.
    const part = turn.recognition.finish(this.ctx.trace?.parent);
    turn.parts.push(part);
    // Parts are said in order, each after the one before (a failed part is reported when the turn ends).
    turn.saying = turn.saying.then(() => part).then((text) => this.sayPart(turn, text), () => {});
    // What follows the pause (silence, or more speech) goes to a recognition of its own.
    turn.recognition = this.deps.stages.recognizer.start();
    const parts = [...turn.parts];
    const picture = this.pictures.pictureFor(turn, this.session);
    Promise.all([Promise.all(parts), picture]).then(
      ([texts, image]) => {
        const transcript = joinParts(texts);
        if (this.closed || this.turn !== turn || !turn.paused || turn.prepared || !transcript || !this.session.turnDetection.createResponse) return;
        const user: MessageItem = { id: turn.itemId, type: 'message', role: 'user', status: 'completed', content: withPicture([{ type: 'input_audio', transcript }], image) };
        turn.prepared = { transcript, reply: this.startReply({}, {}, user) };
      },
      // A failed part is reported when the turn ends.
      () => {},
    );
  }

  /** The caller went on after a pause: a reply prepared for the words before it is dropped. */
  private onSpeechResumed(): void {
    const turn = this.turn;
    if (!turn?.paused) return;
    turn.paused = false;
    turn.prepared?.reply.discard();
    turn.prepared = undefined;
  }

  /** Barge-in: the caller speaks over the agent. */
  private interrupt(): void {
    const reply = this.reply?.generating ? this.reply : this.playing;
    if (!reply || (!reply.generating && this.ctx.audio.queuedMs === 0)) return;
    const dropped = this.stopReply(reply, 'turn_detected');
    this.ctx.emit({ type: 'response.interrupted', responseId: reply.id, droppedAudioMs: Math.round(dropped) });
  }

  private stopReply(reply: Reply, reason: 'turn_detected' | 'client_cancelled'): number {
    const dropped = reply.stop(reason);
    if (this.playing === reply) {
      this.playing = undefined;
      this.ctx.emit({ type: 'output_audio.cleared', responseId: reply.id });
    }
    if (this.reply === reply) this.reply = undefined;
    return dropped;
  }

  /**
   * The caller's turn ended: it becomes a user item, is transcribed, and answered. `committed`: the
   * client ended it (no turn detection), so there was no speech_started to stop.
   */
  private async finishTurn(turn: Turn, audioEndMs: number, speechEndMs: number, stoppedAt: number, committed: boolean): Promise<void> {
    const { ctx } = this;
    // Audio that arrived after the speech ended is the time the end-of-turn rule waited.
    const waitMs = Math.max(0, this.inputMs - speechEndMs);
    const voiceEndedAt = stoppedAt - waitMs;
    // The turn's span: from the end of the caller's voice; each stage is marked at the instant its
    // figure (timings) is measured at.
    const trace = ctx.trace?.turn(turn.itemId, voiceEndedAt);
    trace?.reached('end_of_speech', stoppedAt);
    /** The turn ends once its words are known, with no reply (`outcome` says why). */
    const unanswered = (outcome: string) => {
      trace?.reached('recognition', performance.now());
      trace?.end(outcome);
    };
    if (!committed) ctx.emit({ type: 'input.speech_stopped', itemId: turn.itemId, audioEndMs: Math.round(audioEndMs) });
    const item: MessageItem = { id: turn.itemId, type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_audio', transcript: null }] };
    const placed = ctx.conversation.add(item);
    const previousItemId = placed.ok ? placed.previousItemId : null;
    ctx.emit({ type: 'input.committed', itemId: item.id, previousItemId });
    ctx.emit({ type: 'item.added', item, previousItemId });

    // Still silent since the last pause: what followed it was silence, and the parts are the turn.
    if (turn.paused) turn.recognition.abort();
    const parts = turn.paused ? turn.parts : [...turn.parts, turn.recognition.finish(trace?.parent)];
    // The camera's picture is decoded while the words are recognised (a capture never rejects).
    const picture = this.pictures.pictureFor(turn, this.session);
    let transcript: string;
    let image: StillImage | undefined;
    try {
      [transcript, image] = await Promise.all([Promise.all(parts).then(joinParts), picture]);
      await turn.saying;
    } catch (err) {
      turn.prepared?.reply.discard();
      trace?.abandon(this.closed ? 'call_ended' : 'recognition_failed', this.closed ? undefined : err);
      if (this.closed) return;
      ctx.emit({ type: 'transcription.failed', itemId: item.id, message: (err as Error).message });
      // The turn is lost; the call goes on.
      ctx.emit({ type: 'stage.failed', stage: 'stt', code: 'transcription_failed', message: `Speech recognition failed: ${(err as Error).message}`, recoverable: true, cause: err as Error });
      this.forget(item.id);
      return;
    }
    const prepared = turn.prepared?.transcript === transcript ? turn.prepared.reply : undefined;
    if (!prepared) turn.prepared?.reply.discard();
    if (this.closed || !ctx.conversation.get(item.id)) {
      unanswered(this.closed ? 'call_ended' : 'item_deleted');
      return prepared?.discard();
    }
    // Noise the recogniser heard as nothing is not a turn.
    if (!transcript) {
      unanswered('no_words');
      return this.forget(item.id);
    }
    trace?.words(transcript);
    item.content[0] = { type: 'input_audio', transcript };
    if (image) this.pictures.attach(item, image);
    if (this.session.transcribeInput) {
      // What the deltas have not said yet (all of it when the recogniser revised what they said).
      if (transcript.startsWith(turn.said) && transcript.length > turn.said.length) {
        const rest = transcript.slice(turn.said.length);
        ctx.emit({ type: 'transcription.delta', itemId: item.id, delta: rest });
      }
      ctx.emit({ type: 'transcription.completed', itemId: item.id, transcript });
    }
    ctx.emit({ type: 'item.done', item, previousItemId: ctx.conversation.previousOf(item.id) });
    ctx.turnCompleted({ role: 'user', text: transcript, ...(image ? { image: `data:image/jpeg;base64,${image.thumbnail.toString('base64')}` } : {}) });
    // The caller went on speaking: the reply waits for the end of that turn and answers both.
    if (this.turn || !this.session.turnDetection.createResponse) {
      unanswered(this.turn ? 'caller_went_on' : 'no_reply');
      return prepared?.discard();
    }
    if (this.reply?.generating) this.stopReply(this.reply, 'turn_detected');
    const recognisedAt = performance.now();
    trace?.reached('recognition', recognisedAt);
    const timings = { end_of_turn_wait_ms: Math.round(waitMs), transcription_ms: Math.round(recognisedAt - stoppedAt) };
    if (prepared) this.adopt(prepared, timings, voiceEndedAt, trace);
    else this.startReply({}, { timings, voiceEndedAt, ...(trace ? { turn: trace } : {}) });
  }

  /** A prepared reply becomes the reply: what it has done so far happens now. */
  private adopt(reply: Reply, timings: StageTimings, voiceEndedAt: number, trace: TurnTrace | undefined): void {
    this.idlePrompt.cancel();
    this.reply = reply;
    reply.release(timings, voiceEndedAt, trace);
  }

  private forget(itemId: string): void {
    if (this.ctx.conversation.delete(itemId)) this.ctx.emit({ type: 'item.deleted', itemId });
  }

  /**
   * Starts a reply; with `heldFor`, prepares it unseen as the answer to that (not yet committed)
   * user item, for adopt() or discard().
   */
  private startReply(request: ResponseRequest, measured: { timings?: StageTimings; voiceEndedAt?: number; turn?: TurnTrace }, heldFor?: MessageItem): Reply {
    this.idlePrompt.cancel();
    const s = this.session;
    const modalities = request.outputModalities ?? s.outputModalities;
    const session = request.voice ? { ...s, voice: request.voice } : s;
    const reply = new Reply({
      ctx: this.ctx,
      model: this.deps.modelFor(session),
      speaker: this.deps.stages.speaker,
      settings: {
        instructions: request.instructions !== undefined ? request.instructions : s.instructions,
        temperature: s.temperature,
        tools: request.tools ?? s.tools,
        toolChoice: request.toolChoice ?? s.toolChoice,
        maxOutputTokens: request.maxOutputTokens !== undefined ? request.maxOutputTokens : s.maxOutputTokens,
        voice: session.voice,
        audio: modalities.includes('audio'),
      },
      inConversation: request.conversation !== 'none',
      // A reply asked for while a turn or an audio item is being transcribed answers its words; one
      // started while MCP servers are being listed can call their tools.
      after: Promise.allSettled([...(heldFor ? [] : this.transcribing), this.mcp.ready()]),
      mcp: this.mcp,
      ...(heldFor ? { held: true, input: [...this.ctx.conversation.items, heldFor] } : request.input ? { input: request.input } : {}),
      ...(request.metadata !== undefined ? { metadata: request.metadata } : {}),
      timings: measured.timings ?? {},
      ...(measured.voiceEndedAt !== undefined ? { voiceEndedAt: measured.voiceEndedAt } : {}),
      ...(measured.turn ? { turn: measured.turn } : {}),
      awaitFirstPacket: (turn) => this.firstPacket.await(turn, !!this.playing && this.playing !== reply),
      onAudio: () => {
        if (this.playing === reply) return;
        this.playing = reply;
        this.ctx.emit({ type: 'output_audio.started', responseId: reply.id });
      },
      onTimings: (timings) => this.deps.onTimings?.(s.model, timings),
    });
    if (!heldFor) this.reply = reply;
    reply.start();
    void reply.done.then(() => this.checkPlaybackEnded());
    return reply;
  }

  /** The caller heard all the audio written, or a reply finished: once a finished reply's audio has all played, it has ended. */
  private checkPlaybackEnded(): void {
    const reply = this.playing ?? this.reply;
    if (!reply || reply.generating || this.ctx.audio.queuedMs > 0) return;
    if (this.playing === reply) {
      this.playing = undefined;
      this.ctx.emit({ type: 'output_audio.stopped', responseId: reply.id });
    }
    reply.playbackEnded();
    if (this.reply === reply) this.reply = undefined;
    this.idlePrompt.arm();
  }
}

export function voiceAgentFactory(deps: VoiceAgentDeps): AgentFactory {
  return { create: (ctx) => new VoiceAgent(ctx, deps) };
}

