// A caller's microphone in a room (attached to a libwebrtc call with replaceTrack): a noise bed
// looped under everything, the agent's own voice heard back from the loudspeaker (`echo`: `gain`
// times as loud, `delayMs` after the call's audio arrived — a client without echo cancellation), and
// speech queued with say(). Fed in real time in 10 ms chunks, like attachMicrophone.
import wrtc from '@roamhq/wrtc';
import type { RtcClient } from './rtcClient.ts';

const { RTCAudioSink, RTCAudioSource } = (wrtc as any).nonstandard;
const CHUNK = 480;

export interface RoomOptions {
  /** Looped under everything (48 kHz mono). */
  noise?: Int16Array;
  echo?: { gain: number; delayMs: number };
}

export interface RoomMicrophone {
  /** Queues speech; resolves once it has all been sent. */
  say(pcm: Int16Array): Promise<void>;
  /** Resolves after `ms` more of the microphone's audio has been sent. */
  elapse(ms: number): Promise<void>;
  stop(): void;
}

export async function attachRoomMicrophone(client: RtcClient, options: RoomOptions): Promise<RoomMicrophone> {
  const source = new RTCAudioSource();
  const track = source.createTrack();
  const transceiver = client.pc.getTransceivers().find((t: any) => t.receiver.track.kind === 'audio');
  await transceiver.sender.replaceTrack(track);

  // The loudspeaker: what the call plays, kept `delayMs` before it reaches the microphone.
  const delay = options.echo ? Math.round(options.echo.delayMs * 48) : 0;
  let heard: number[] = new Array(delay).fill(0);
  const sink = options.echo ? new RTCAudioSink(transceiver.receiver.track) : undefined;
  if (sink) {
    sink.ondata = (d: { samples: Int16Array; channelCount: number }) => {
      for (let i = 0; i < d.samples.length; i += d.channelCount) heard.push(d.samples[i]!);
      // The sink and the microphone's timer drift apart: the delay is kept, not let grow.
      if (heard.length > delay + 10 * CHUNK) heard = heard.slice(heard.length - delay - CHUNK);
    };
  }

  let speech: Int16Array = new Int16Array(0);
  let spoken: (() => void)[] = [];
  let sent = 0;
  let clocks: { at: number; resolve: () => void }[] = [];
  let noiseAt = 0;
  const timer = setInterval(() => {
    const chunk = new Int16Array(CHUNK);
    for (let i = 0; i < CHUNK; i++) {
      let x = 0;
      if (options.noise) x += options.noise[(noiseAt + i) % options.noise.length]!;
      if (options.echo) x += (heard[i] ?? 0) * options.echo.gain;
      if (i < speech.length) x += speech[i]!;
      chunk[i] = Math.max(-32768, Math.min(32767, Math.round(x)));
    }
    noiseAt += CHUNK;
    if (options.echo) heard = heard.length > CHUNK ? heard.slice(CHUNK) : new Array(0);
    if (speech.length) {
      speech = speech.subarray(Math.min(CHUNK, speech.length));
      if (!speech.length) {
        for (const s of spoken) s();
        spoken = [];
      }
    }
    sent += 10;
    clocks = clocks.filter((c) => (sent >= c.at ? (c.resolve(), false) : true));
    source.onData({ samples: chunk, sampleRate: 48000, bitsPerSample: 16, channelCount: 1, numberOfFrames: CHUNK });
  }, 10);

  return {
    say: (pcm) =>
      new Promise<void>((resolve) => {
        const merged = new Int16Array(speech.length + pcm.length);
        merged.set(speech);
        merged.set(pcm, speech.length);
        speech = merged;
        spoken.push(resolve);
      }),
    elapse: (ms) => new Promise<void>((resolve) => clocks.push({ at: sent + ms, resolve })),
    stop: () => {
      clearInterval(timer);
      sink?.stop();
      track.stop();
    },
  };
}
