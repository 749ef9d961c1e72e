// A call over a WebSocket (OpenAI's Realtime WebSocket interface): the socket is the event channel,
// and audio travels inside events, base64 in the session's encoding (PCM 24 kHz, G.711 8 kHz) —
// decoded and framed here for the agent, and the agent's speech encoded here, paced out a little
// ahead of the client's playback (pacedOutput.ts).
// What the client's messages cost is bounded a turn of the event loop (inboundWork.ts); a long append
// is handled a piece at a time, in the same bound.
import type { WebSocket } from 'ws';
import { FRAME_SAMPLES, SAMPLE_RATE, type AudioOut } from '../../media/audio/format.js';
import { StreamResampler, frameConverter } from '../../media/audio/resample.js';
import { WIRE_RATE, decodeWireAudio, encodeWireAudio, type AudioEncoding } from '../../media/audio/wireAudio.js';
import type { Session } from '../../session/session.js';
import { bytesOnlyQuality, type AudioTally, type WireQuality } from '../callFigures.js';
import type { EventAudio, EventAudioTransport, TransportEvents } from '../transport.js';
import { InboundWork } from './inboundWork.js';
import { PacedOutput } from './pacedOutput.js';
import { websocketChannel } from './websocketChannel.js';

/**
 * An append is handled in pieces of this much base64 (≈ 1 s of PCM 24 kHz): a multiple of 8
 * characters, so each piece decodes to whole 16-bit samples.
 */
const APPEND_PIECE_CHARS = 64 * 1024;

/** Close codes (RFC 6455): going away (shutdown), policy (a client too slow to read), normal. */
const CLOSE_CODE: Record<string, number> = { server_shutdown: 1001, client_too_slow: 1008 };

export class WebSocketTransport implements EventAudioTransport {
  readonly kind = 'websocket';
  readonly offers = { mediaTrack: false, clientChannel: true } as const;
  readonly audioOut: AudioOut;
  readonly eventAudio: EventAudio;
  private events: TransportEvents | undefined;
  private sendOutput: (audio: string) => void = () => {};
  private readonly output: PacedOutput;
  private socket: WebSocket | undefined;
  /** Where the client's messages, and the pieces of a long append, wait their turn. */
  private inbound: InboundWork | undefined;
  private closed = false;
  private inputEncoding: AudioEncoding = 'pcm16';
  private outputEncoding: AudioEncoding = 'pcm16';
  private agentRate = SAMPLE_RATE;
  private toAgentRate = new StreamResampler(WIRE_RATE.pcm16, SAMPLE_RATE);
  private fromAgent = frameConverter(SAMPLE_RATE, WIRE_RATE.pcm16);
  /** Input samples (at the agent's rate) short of a whole 20 ms frame. */
  private partial = new Int16Array(0);
  /** Wire audio bytes each way and the seconds they carried, for the call's bitrates. */
  private readonly received: AudioTally = { bytes: 0, seconds: 0 };
  private readonly sent: AudioTally = { bytes: 0, seconds: 0 };

  /**
   * `maxUnsentBytes`: what a client that does not read may leave unsent before its session ends;
   * `leadMs`: how far ahead of the client's playback the agent's audio is sent (0: as it comes).
   */
  constructor(
    private readonly maxUnsentBytes: number,
    leadMs = 500,
  ) {
    this.output = new PacedOutput({ leadMs, send: (pcm) => this.sendPiece(pcm) });
    this.audioOut = this.output.audioOut;
    this.eventAudio = {
      sessionChanged: (session) => this.sessionChanged(session),
      append: (audio) => this.appendAudio(audio),
      onOutput: (send) => void (this.sendOutput = send),
    };
  }

  attach(events: TransportEvents): void {
    this.events = events;
    if (this.socket) this.announce();
  }

  /** The upgraded socket (the call was admitted before the upgrade). */
  bind(socket: WebSocket): void {
    this.socket = socket;
    this.inbound = new InboundWork(socket);
    if (this.closed) return void socket.close(CLOSE_CODE.server_shutdown ?? 1000);
    if (this.events) this.announce();
  }

  setInputRate(rate: number): void {
    this.agentRate = rate;
    this.rebuildInput();
  }

  private sessionChanged(session: Session): void {
    const input = session.inputAudio ?? 'pcm16';
    const output = session.outputAudio ?? 'pcm16';
    if (input !== this.inputEncoding) {
      this.inputEncoding = input;
      this.rebuildInput();
    }
    if (output !== this.outputEncoding) {
      this.outputEncoding = output;
      this.fromAgent = frameConverter(SAMPLE_RATE, WIRE_RATE[output]);
    }
  }

  /** A piece of the agent's audio, due now: encoded for the wire and sent inside an event. */
  private sendPiece(pcm: Int16Array): void {
    const wire = encodeWireAudio(this.fromAgent(pcm), this.outputEncoding);
    this.sent.bytes += wire.length;
    this.sent.seconds += pcm.length / SAMPLE_RATE;
    this.sendOutput(wire.toString('base64'));
    // The client plays it from now on.
    this.events?.agentAudio(pcm);
  }

  /**
   * The first piece now; the others each in turn, before the client's next message. The append's
   * audio was recorded up to its arrival: each frame is told when its recording ended (the echo
   * guard meets it with the agent's audio playing then, not with what plays as the append arrives).
   */
  private appendAudio(audio: string): void {
    const arrivedAt = performance.now();
    const msOf = (chars: number) => ((chars * 3) / 4 / (this.inputEncoding === 'pcm16' ? 2 : 1) / WIRE_RATE[this.inputEncoding]) * 1000;
    if (audio.length <= APPEND_PIECE_CHARS) return this.appendPiece(audio, arrivedAt);
    this.appendPiece(audio.slice(0, APPEND_PIECE_CHARS), arrivedAt - msOf(audio.length - APPEND_PIECE_CHARS));
    const rest: { bytes: number; run: () => void }[] = [];
    for (let at = APPEND_PIECE_CHARS; at < audio.length; at += APPEND_PIECE_CHARS) {
      const piece = audio.slice(at, at + APPEND_PIECE_CHARS);
      const endsAt = arrivedAt - msOf(Math.max(0, audio.length - at - APPEND_PIECE_CHARS));
      rest.push({ bytes: piece.length, run: () => this.appendPiece(piece, endsAt) });
    }
    this.inbound?.next(rest);
  }

  /** `endsAt`: when the piece's last sample was recorded (performance.now() ms). */
  private appendPiece(audio: string, endsAt: number): void {
    const wire = Buffer.from(audio, 'base64');
    const decoded = decodeWireAudio(wire, this.inputEncoding);
    this.received.bytes += wire.length;
    this.received.seconds += decoded.length / WIRE_RATE[this.inputEncoding];
    const samples = this.toAgentRate.push(decoded);
    const frame = (this.agentRate * FRAME_SAMPLES) / SAMPLE_RATE;
    let all = samples;
    if (this.partial.length) {
      all = new Int16Array(this.partial.length + samples.length);
      all.set(this.partial);
      all.set(samples, this.partial.length);
    }
    let at = 0;
    // A frame's recording ended before the piece's by the audio after it in the piece.
    const capturedAt = (end: number) => endsAt - ((all.length - end) * 1000) / this.agentRate;
    for (; at + frame <= all.length; at += frame) this.events?.audio(all.slice(at, at + frame), capturedAt(at + frame));
    this.partial = all.slice(at);
  }

  quality(): WireQuality {
    return bytesOnlyQuality(this.received, this.sent);
  }

  async close(reason: string): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Nothing plays after the call's end.
    this.output.close();
    const socket = this.socket;
    if (!socket) return;
    if (reason === 'client_too_slow') return void socket.terminate();
    // After the goodbye event: ws sends what is queued before its close frame.
    socket.close(CLOSE_CODE[reason] ?? 1000, reason.slice(0, 100));
  }

  private rebuildInput(): void {
    this.toAgentRate = new StreamResampler(WIRE_RATE[this.inputEncoding], this.agentRate);
    this.partial = new Int16Array(0);
  }

  private announce(): void {
    const socket = this.socket!;
    const events = this.events!;
    socket.on('close', () => {
      if (!this.closed) events.lost('hangup');
    });
    socket.on('error', () => {
      if (!this.closed) events.lost('connection_lost');
    });
    events.connected();
    // A client that does not read: its session ends rather than the node's memory growing.
    events.channel(
      websocketChannel(
        socket,
        'websocket',
        this.maxUnsentBytes,
        () => {
          if (!this.closed) events.lost('client_too_slow');
        },
        this.inbound!,
      ),
    );
  }
}
