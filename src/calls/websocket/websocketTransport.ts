// A call over a WebSocket (OpenAI's Realtime WebSocket interface): the socket is the event channel,
// and audio travels inside events, base64 in the session's encoding (PCM 24 kHz, G.711 8 kHz) —
// decoded and framed here for the agent, and the agent's speech encoded here and sent in 100 ms
// pieces as a real-time service sends it: a little ahead of the client's playback (`leadMs`), so a
// reply can still be cancelled while it is heard. The client plays it as it arrives: its playout is
// kept as a timeline (playoutTimeline.ts).
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
import { PlayoutTimeline } from './playoutTimeline.js';
import { websocketChannel } from './websocketChannel.js';

/**
 * An append is handled in pieces of this much base64 (≈ 1 s of PCM 24 kHz): a multiple of 8
 * characters, so each piece decodes to whole 16-bit samples.
 */
const APPEND_PIECE_CHARS = 64 * 1024;

/** The agent's audio goes out in pieces of this much (48 kHz samples: 100 ms). */
const OUTPUT_PIECE_SAMPLES = 4800;

/** Close codes (RFC 6455): going away (shutdown), policy (a client too slow to read), normal. */
const CLOSE_CODE: Record<string, number> = { server_shutdown: 1001, client_too_slow: 1008 };

export class WebSocketTransport implements EventAudioTransport {
  readonly kind = 'websocket';
  readonly offers = { mediaTrack: false, clientChannel: true } as const;
  readonly audioOut: AudioOut;
  readonly eventAudio: EventAudio;
  private events: TransportEvents | undefined;
  private sendOutput: (audio: string) => void = () => {};
  private readonly playout = new PlayoutTimeline();
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
  /** The agent's audio written and not sent yet (48 kHz), in pieces, and how long it plays. */
  private readonly unsent: Int16Array[] = [];
  private unsentMs = 0;
  private pumpTimer: NodeJS.Timeout | undefined;
  /** Told once everything written has been sent (or dropped). */
  private allSent: (() => void)[] = [];

  /**
   * `maxUnsentBytes`: what a client that does not read may leave unsent before its session ends;
   * `leadMs`: how far ahead of the client's playback the agent's audio is sent (0: as it comes).
   */
  constructor(
    private readonly maxUnsentBytes: number,
    private readonly leadMs = 500,
  ) {
    const playout = this.playout;
    const transport = this;
    this.audioOut = {
      write: (pcm) => {
        if (this.closed) return;
        // Unpaced, each piece of speech goes out whole, as it was synthesised.
        const piece = this.leadMs === 0 ? pcm.length : OUTPUT_PIECE_SAMPLES;
        for (let at = 0; at < pcm.length; at += piece) {
          this.unsent.push(pcm.subarray(at, at + piece));
          this.unsentMs += (Math.min(piece, pcm.length - at) * 1000) / SAMPLE_RATE;
        }
        this.pump();
      },
      // What was sent is the client's: only what was not sent yet is dropped (an OpenAI client
      // truncates the item itself, to what it played), and the client is taken to stop playing now.
      clear: () => {
        const dropped = this.dropUnsent();
        playout.stop();
        return dropped;
      },
      get queuedMs() {
        return playout.queuedMs + transport.unsentMs;
      },
      sent: () => (this.unsent.length ? new Promise<void>((resolve) => this.allSent.push(resolve)) : Promise.resolve()),
      onPlayback: (listener) => playout.onPlayback(listener),
      clientTruncates: true,
    };
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

  /** Sends the agent's audio while the client's playback is less than `leadMs` ahead; the rest later. */
  private pump(): void {
    clearTimeout(this.pumpTimer);
    this.pumpTimer = undefined;
    // A piece goes out when it keeps the client at most leadMs ahead (or when nothing is queued).
    const fits = () => this.leadMs === 0 || this.playout.queuedMs === 0 || this.playout.queuedMs + (this.unsent[0]!.length * 1000) / SAMPLE_RATE <= this.leadMs;
    while (this.unsent.length && !this.closed && fits()) {
      const pcm = this.unsent.shift()!;
      const ms = (pcm.length * 1000) / SAMPLE_RATE;
      this.unsentMs = this.unsent.length ? this.unsentMs - ms : 0;
      const wire = encodeWireAudio(this.fromAgent(pcm), this.outputEncoding);
      this.sent.bytes += wire.length;
      this.sent.seconds += pcm.length / SAMPLE_RATE;
      this.sendOutput(wire.toString('base64'));
      // The client plays it from now on, after what it was sent before.
      this.events?.agentAudio(pcm);
      this.playout.sent(ms);
    }
    if (this.unsent.length && !this.closed) {
      this.pumpTimer = setTimeout(() => this.pump(), Math.max(5, this.playout.queuedMs + (this.unsent[0]!.length * 1000) / SAMPLE_RATE - this.leadMs));
    } else this.tellAllSent();
  }

  /** Drops the audio not sent yet; returns how long it would have played. */
  private dropUnsent(): number {
    const dropped = this.unsentMs;
    this.unsent.length = 0;
    this.unsentMs = 0;
    clearTimeout(this.pumpTimer);
    this.pumpTimer = undefined;
    this.tellAllSent();
    return dropped;
  }

  private tellAllSent(): void {
    const waiting = this.allSent;
    this.allSent = [];
    for (const resolve of waiting) resolve();
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
    this.dropUnsent();
    this.playout.stop();
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
