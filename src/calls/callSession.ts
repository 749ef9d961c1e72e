// One live call: the server's peer, its media in and out, the agent, the data-channel protocol and
// the lifecycle connecting → active → ended | failed.
import { randomInt } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Agent, AgentEvent, AgentFactory, ConversationTurn } from '../agent/types.js';
import { AudioReceiver } from '../media/audioReceiver.js';
import { AudioSender } from '../media/audioSender.js';
import { buildReport } from '../media/rtcp.js';
import { VideoReceiver } from '../media/videoReceiver.js';
import type { ConversationStore } from '../storage/conversations.js';
import type { MessageChannel, PeerState, ServerPeer } from './peer/types.js';
import type { OfferPlan } from './sdpOffer.js';
import type { SessionParams } from '../session/params.js';
import { applySessionUpdate } from '../session/update.js';

export type CallState = 'connecting' | 'active' | 'ended' | 'failed';

export interface CallTimeouts {
  connectTimeoutMs: number;
  idleTimeoutMs: number;
  maxDurationMs: number;
}

export interface CallSessionOptions {
  id: string;
  threadId: string;
  peer: ServerPeer;
  plan: OfferPlan;
  params: SessionParams;
  history: ConversationTurn[];
  agentFor: (params: SessionParams) => AgentFactory;
  conversations: ConversationStore;
  timeouts: CallTimeouts;
  log: FastifyBaseLogger;
  /** Opus encoder complexity of the agent's voice (OPUS_COMPLEXITY). */
  opusComplexity?: number;
}

/** Data-channel label the existing clients open; events go to whichever channel the client opened. */
export const CLIENT_EVENTS_LABEL = 'orga-realtime-client-events';
const MAX_MESSAGE_BYTES = 64 * 1024;
const MAX_TEXT_CHARS = 4096;
const PENDING_EVENTS_LIMIT = 100;

export class CallSession {
  readonly id: string;
  state: CallState = 'connecting';
  params: SessionParams;
  endReason: string | undefined;
  private readonly peer: ServerPeer;
  private readonly sender: AudioSender;
  private readonly receiver: AudioReceiver;
  private readonly video: VideoReceiver | undefined;
  private agent: Agent;
  private channel: MessageChannel | undefined;
  private readonly pending: string[] = [];
  private readonly timers: NodeJS.Timeout[] = [];
  private lastActivity = performance.now();
  private turnSeq: number;
  private finished: Promise<void> | undefined;
  private readonly endListeners: ((s: CallSession) => void)[] = [];

  constructor(private readonly opts: CallSessionOptions) {
    this.id = opts.id;
    this.peer = opts.peer;
    this.params = opts.params;
    this.turnSeq = opts.history.length;
    this.sender = new AudioSender((p) => this.peer.sendAudioPacket(p), randomInt(1, 0xffffffff), opts.plan.opusPayloadType, {
      encoder: { complexity: opts.opusComplexity },
    });
    this.receiver = new AudioReceiver(opts.plan.opusPayloadType, (frame) => this.agent.onAudio(frame));
    if (opts.plan.video) {
      this.video = new VideoReceiver(opts.plan.video.codecs, (frame) => {
        if (this.params.modalities.includes('video')) this.agent.onVideoFrame?.(frame);
      });
    }
    this.agent = this.createAgent();

    this.peer.onStateChange((s) => this.onPeerState(s));
    this.peer.onDataChannel((ch) => this.onChannel(ch));
    this.peer.onAudioPacket((p) => {
      this.lastActivity = performance.now();
      this.receiver.handle(p);
    });
    this.peer.onVideoPacket((p) => this.video?.handle(p));
    this.timers.push(setTimeout(() => this.end('failed', 'connect_timeout'), opts.timeouts.connectTimeoutMs));
  }

  onEnd(cb: (s: CallSession) => void): void {
    this.endListeners.push(cb);
  }

  get audioSsrc(): number {
    return this.sender.ssrc;
  }

  get mediaStats() {
    return { audioIn: this.receiver.stats, audioOut: { packets: this.sender.packets, octets: this.sender.octets }, videoFrames: this.video?.frames ?? 0 };
  }

  private createAgent(): Agent {
    return this.opts.agentFor(this.params).create({
      conversationId: this.id,
      params: this.params,
      audio: this.sender,
      emit: (event) => this.send(event),
      history: [...this.opts.history],
      recordTurn: (turn) => this.recordTurn(turn),
    });
  }

  private recordTurn(turn: ConversationTurn): void {
    if (!this.params.history) return;
    const seq = this.turnSeq++;
    void this.opts.conversations.addTurn(this.opts.threadId, seq, turn.role, turn.text).catch((err) => this.opts.log.error({ err }, 'turn not recorded'));
  }

  private onPeerState(state: PeerState): void {
    if (state === 'connected' && this.state === 'connecting') {
      this.state = 'active';
      clearTimeout(this.timers[0]);
      this.lastActivity = performance.now();
      this.sender.start();
      this.timers.push(setInterval(() => this.sendReport(), 1000));
      this.timers.push(setTimeout(() => this.end('ended', 'max_duration'), this.opts.timeouts.maxDurationMs));
      this.timers.push(
        setInterval(() => {
          if (performance.now() - this.lastActivity > this.opts.timeouts.idleTimeoutMs) this.end('ended', 'idle_timeout');
        }, Math.min(1000, this.opts.timeouts.idleTimeoutMs)),
      );
      void this.opts.conversations.markActive(this.id).catch((err) => this.opts.log.error({ err }, 'record failed'));
      this.opts.log.info({ conversation: this.id }, 'call connected');
    } else if (state === 'failed') {
      this.end(this.state === 'connecting' ? 'failed' : 'ended', 'ice_failed');
    } else if (state === 'disconnected' || state === 'closed') {
      // libdatachannel reports the peer's DTLS close (its pc.close()) as disconnected.
      this.end(this.state === 'connecting' ? 'failed' : 'ended', 'hangup');
    }
  }

  private sendReport(): void {
    const report = buildReport(
      'parley',
      { ssrc: this.sender.ssrc, rtpTimestamp: this.sender.rtpTimestamp, packets: this.sender.packets, octets: this.sender.octets },
      this.receiver.reportBlock(),
      this.sender.packets > 0,
    );
    this.peer.sendAudioPacket(report);
  }

  private onChannel(channel: MessageChannel): void {
    // The first channel the client opens carries events, preferring the existing clients' label.
    if (this.channel && channel.label !== CLIENT_EVENTS_LABEL) return;
    this.channel = channel;
    channel.onMessage((text) => this.onMessage(text));
    this.send({ type: 'session.created', session: this.sessionObject() });
    this.send({ type: 'conversation.created', conversation: { id: this.id, object: 'realtime.conversation' } });
    for (const message of this.pending.splice(0)) channel.send(message);
  }

  private sessionObject() {
    const p = this.params;
    return {
      id: this.id,
      object: 'realtime.session',
      model: p.model,
      voice: p.voice,
      temperature: p.temperature,
      instructions: p.instructions,
      modalities: p.modalities,
      return_transcription: p.return_transcription,
      history: p.history,
    };
  }

  /** Server events (the agent's too), queued until the client's channel is open. */
  private send(event: AgentEvent): void {
    const text = JSON.stringify(event);
    if (this.channel) this.channel.send(text);
    else if (this.pending.length < PENDING_EVENTS_LIMIT) this.pending.push(text);
  }

  private error(code: string, message: string, extra: Record<string, unknown> = {}): void {
    this.send({ type: 'error', error: { type: 'invalid_request_error', code, message, param: null, ...extra } });
  }

  private onMessage(text: string): void {
    this.lastActivity = performance.now();
    if (text.length > MAX_MESSAGE_BYTES) return this.error('message_too_large', `Messages are limited to ${MAX_MESSAGE_BYTES} bytes.`);
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch {
      return this.error('invalid_json', 'The message is not valid JSON.');
    }
    if (!msg || typeof msg !== 'object' || Array.isArray(msg)) return this.error('invalid_event', 'A message must be a JSON object with a "type" (or "event") field.');
    const m = msg as Record<string, unknown>;
    const kind = typeof m.type === 'string' ? m.type : typeof m.event === 'string' ? m.event : undefined;
    try {
      switch (kind) {
        case 'session.update':
          return this.onSessionUpdate(m.event !== undefined && m.type === undefined ? m.data : (m.session ?? m.data));
        case 'response.cancel':
          this.agent.cancel();
          return this.send({ type: 'response.cancelled' });
        case 'conversation.item.create':
          return this.onUserText(m);
        case 'session.end':
          this.end('ended', 'session_end');
          return;
        default:
          return this.error('unknown_event', kind ? `Unknown event type "${kind.slice(0, 64)}".` : 'The message has no "type" (or "event") field.');
      }
    } catch (err) {
      this.opts.log.error({ err, conversation: this.id }, 'client message handling failed');
      this.error('server_error', 'The message could not be handled.');
    }
  }

  private onSessionUpdate(data: unknown): void {
    const result = applySessionUpdate(this.params, data ?? {});
    if (!result.ok) return this.error('invalid_session_update', result.detail.map((d) => `${d.loc.slice(1).join('.')}: ${d.msg}`).join('; '), { detail: result.detail });
    const modelChanged = result.params.model !== this.params.model;
    this.params = result.params;
    if (modelChanged) {
      this.agent.close();
      this.agent = this.createAgent();
    } else {
      this.agent.onParamsUpdate(this.params);
    }
    void this.opts.conversations.updateParams(this.id, this.params).catch(() => {});
    this.send({ type: 'session.updated', session: this.sessionObject() });
  }

  private onUserText(m: Record<string, unknown>): void {
    const item = m.item as { content?: { type?: string; text?: unknown }[] } | undefined;
    const text = item?.content?.find((c) => typeof c?.text === 'string')?.text ?? m.text;
    if (typeof text !== 'string' || !text.trim()) {
      return this.error('invalid_item', 'conversation.item.create needs item.content[0].text (or text): a non-empty string.');
    }
    if (text.length > MAX_TEXT_CHARS) return this.error('invalid_item', `Text messages are limited to ${MAX_TEXT_CHARS} characters.`);
    this.agent.onUserText(text);
  }

  /** Ends the call once: tells the client, closes media and the peer, records the end. */
  end(state: 'ended' | 'failed', reason: string): Promise<void> {
    if (this.finished) return this.finished;
    this.state = state;
    this.endReason = reason;
    for (const t of this.timers) clearTimeout(t);
    this.sender.stop();
    this.agent.close();
    this.send({ type: 'session.ended', reason });
    this.finished = (async () => {
      // The goodbye event gets 100 ms to leave. Never synchronous up to here, so a stack that
      // reports `closed` from inside peer.close() finds `finished` set and cannot end it twice.
      await new Promise((r) => setTimeout(r, this.channel && reason !== 'hangup' ? 100 : 0));
      this.peer.close();
      for (const cb of this.endListeners) cb(this);
      this.opts.log.info({ conversation: this.id, state, reason }, 'call ended');
      await this.opts.conversations.finish(this.id, state, reason).catch((err) => this.opts.log.error({ err }, 'record failed'));
    })();
    return this.finished;
  }
}
