// A call's figures: its usage (audio each way, model tokens) and the quality of its wire (loss,
// jitter, round trip, time to connected, bitrate each way). The schemas here are the one source of
// their shape: the record's JSON, the API's response and the types the code uses. What cannot be
// measured on a wire (loss on a WebSocket) is null, never a made-up zero.
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { FRAME_SAMPLES, SAMPLE_RATE, type AudioOut } from '../media/audio/format.js';
import type { ReceptionStats } from '../media/audioReceiver.js';
import type { RoundTripMeter } from '../media/roundTrip.js';
import type { CallEvent } from '../session/events.js';

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const CallUsageSchema = Type.Object(
  {
    caller_audio_s: Type.Number({ description: "Seconds of the caller's audio the call received" }),
    agent_audio_s: Type.Number({ description: "Seconds of the agent's speech handed to the wire (what barge-in dropped and what was unsent at the end not counted)" }),
    input_tokens: Type.Integer({ description: "Model input tokens over the call's replies (reported by the model, else estimated)" }),
    output_tokens: Type.Integer({ description: "Model output tokens over the call's replies" }),
    video_frames_received: Type.Integer({ description: "Frames of the caller's camera the call received (whatever the modalities)" }),
    video_frames_to_model: Type.Integer({ description: "Pictures of the caller's camera put in a user message for the model (at most one a turn)" }),
  },
  { title: 'CallUsage', description: 'What a call used, counted by the node that carried it' },
);
export type CallUsage = Static<typeof CallUsageSchema>;

/** What a transport measures of its wire: the part of a call's quality that depends on it. */
export const WireQualitySchema = Type.Object({
  inbound: Type.Object(
    {
      packets: Nullable(Type.Integer({ description: 'RTP packets received from the caller' })),
      packets_lost: Nullable(Type.Integer({ description: 'Packets the caller sent that never arrived (RFC 3550 cumulative loss)' })),
      loss_pct: Nullable(Type.Number({ description: 'packets_lost as a percentage of the packets the caller sent' })),
      jitter_p95_ms: Nullable(Type.Number({ description: 'The 95th percentile of the interarrival jitter (RFC 3550), sampled each second' })),
      bitrate_kbps: Nullable(Type.Number({ description: "The caller's audio payload bitrate while it was sending (bits ÷ seconds of audio carried)" })),
    },
    { description: 'The caller → server direction' },
  ),
  outbound: Type.Object(
    {
      packets: Nullable(Type.Integer({ description: 'RTP packets sent to the caller' })),
      bitrate_kbps: Nullable(Type.Number({ description: "The agent's audio payload bitrate while it was speaking" })),
    },
    { description: 'The server → caller direction' },
  ),
  rtt_ms: Type.Object(
    {
      p50: Nullable(Type.Number()),
      p95: Nullable(Type.Number()),
      last: Nullable(Type.Number()),
      samples: Type.Integer({ description: 'Round trips measured (one per RTCP reception report about our stream)' }),
    },
    { description: "Round-trip time from the caller's RTCP reports about the server's stream (now − LSR − DLSR); null where the wire has none" },
  ),
});
export type WireQuality = Static<typeof WireQualitySchema>;

export const CallQualitySchema = Type.Object(
  {
    transport: Type.String({ description: 'The wire the call came over: webrtc, websocket or sip' }),
    time_to_connected_ms: Type.Number({ description: "From the call's request admitted to its transport first connected (ICE and DTLS up; a socket accepted)" }),
    ...WireQualitySchema.properties,
  },
  { title: 'CallQuality', description: "How a call's wire behaved; null fields are not measurable on that wire" },
);
export type CallQuality = Static<typeof CallQualitySchema>;

export interface CallFigures {
  usage: CallUsage;
  /** Null for a call that never connected (no media flowed). */
  quality: CallQuality | null;
}

/** The figures' numbers as they are shown: to a tenth (ms, kbps) or a hundredth (percentages, seconds). */
export const round = (value: number, places = 1): number => Math.round(value * 10 ** places) / 10 ** places;

/** Payload bitrate in kbit/s of `bytes` carrying `seconds` of audio; null when nothing was carried. */
export function kbps(bytes: number, seconds: number): number | null {
  return seconds > 0 ? round((bytes * 8) / seconds / 1000) : null;
}

/** Audio bytes and the seconds of audio they carried, one direction of a wire. */
export interface AudioTally {
  bytes: number;
  seconds: number;
}

/** A wire with no RTP (a WebSocket): no packets, loss, jitter nor round trips; only the audio bytes each way. */
export function bytesOnlyQuality(inbound: AudioTally, outbound: AudioTally): WireQuality {
  return {
    inbound: { packets: null, packets_lost: null, loss_pct: null, jitter_p95_ms: null, bitrate_kbps: kbps(inbound.bytes, inbound.seconds) },
    outbound: { packets: null, bitrate_kbps: kbps(outbound.bytes, outbound.seconds) },
    rtt_ms: { p50: null, p95: null, last: null, samples: 0 },
  };
}

/**
 * An RTP wire's figures (WebRTC, SIP): the caller's stream as received, ours as sent (each packet
 * one 20 ms frame), the round trips from the caller's reports on ours.
 */
export function rtpQuality(inbound: ReceptionStats, sent: { packets: number; octets: number }, rtt: RoundTripMeter): WireQuality {
  const ms = (value: number | undefined) => (value === undefined ? null : round(value));
  return {
    inbound: {
      packets: inbound.received,
      packets_lost: inbound.lost,
      loss_pct: inbound.expected > 0 ? round((inbound.lost / inbound.expected) * 100, 2) : null,
      jitter_p95_ms: ms(inbound.jitterP95Ms),
      bitrate_kbps: kbps(inbound.payloadBytes, inbound.audioSeconds),
    },
    outbound: { packets: sent.packets, bitrate_kbps: kbps(sent.octets, (sent.packets * FRAME_SAMPLES) / SAMPLE_RATE) },
    rtt_ms: { p50: ms(rtt.samples.percentile(50)), p95: ms(rtt.samples.percentile(95)), last: ms(rtt.last), samples: rtt.samples.count },
  };
}

/** A transport that measures nothing of its wire. */
const UNMEASURED_WIRE = bytesOnlyQuality({ bytes: 0, seconds: 0 }, { bytes: 0, seconds: 0 });

/**
 * Counts a call's usage as it goes (the caller's frames, the agent's audio through the call's audio
 * out, the tokens of each response.done) and when it connected; the wire's figures come from the
 * transport when asked.
 */
export class CallMeter {
  private readonly createdAt = performance.now();
  private connectedAfterMs: number | undefined;
  private callerFrames = 0;
  private videoFrames = 0;
  private videoFramesToModel = 0;
  private agentSamples = 0;
  private agentDroppedMs = 0;
  private inputTokens = 0;
  private outputTokens = 0;

  /** The transport connected (the first time counts). */
  connected(): void {
    this.connectedAfterMs ??= performance.now() - this.createdAt;
  }

  /** 20 ms of the caller's audio arrived. */
  callerFrame(): void {
    this.callerFrames++;
  }

  /** A frame of the caller's camera arrived. */
  videoFrame(): void {
    this.videoFrames++;
  }

  event(event: CallEvent): void {
    if (event.type === 'item.done' && event.item.type === 'message') {
      this.videoFramesToModel += event.item.content.filter((c) => c.type === 'input_image' && c.source === 'camera').length;
    }
    if (event.type !== 'response.done' || !event.response.usage) return;
    this.inputTokens += event.response.usage.inputTokens;
    this.outputTokens += event.response.usage.outputTokens;
  }

  /** `out`, counting what the agent writes to it and what is dropped from it. */
  metered(out: AudioOut): AudioOut {
    const meter = this;
    return {
      write(pcm) {
        meter.agentSamples += pcm.length;
        out.write(pcm);
      },
      clear() {
        const dropped = out.clear();
        meter.agentDroppedMs += dropped;
        return dropped;
      },
      get queuedMs() {
        return out.queuedMs;
      },
      ...(out.sent ? { sent: () => out.sent!() } : {}),
      onPlayback: (listener) => out.onPlayback(listener),
      ...(out.clientTruncates ? { clientTruncates: true } : {}),
    };
  }

  /** The figures so far; `unsentMs` is the agent's audio still queued (not counted as spoken). */
  figures(transport: string, wire: WireQuality | undefined, unsentMs: number): CallFigures {
    const agentMs = (this.agentSamples / SAMPLE_RATE) * 1000 - this.agentDroppedMs - unsentMs;
    const usage: CallUsage = {
      caller_audio_s: round(this.callerFrames * 0.02, 2),
      agent_audio_s: round(Math.max(0, agentMs) / 1000, 2),
      input_tokens: this.inputTokens,
      output_tokens: this.outputTokens,
      video_frames_received: this.videoFrames,
      video_frames_to_model: this.videoFramesToModel,
    };
    if (this.connectedAfterMs === undefined) return { usage, quality: null };
    const quality: CallQuality = {
      transport,
      time_to_connected_ms: round(this.connectedAfterMs),
      ...(wire ?? UNMEASURED_WIRE),
    };
    return { usage, quality };
  }
}
