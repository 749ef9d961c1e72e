// A browser app built on @openai/agents-realtime exactly as its docs show — a RealtimeAgent, a
// RealtimeSession over the OpenAIRealtimeWebRTC transport — whose only change for Parley is the
// transport's baseUrl. Bundled by the test with esbuild; the test drives it through `window.app`.
import { OpenAIRealtimeWebRTC, RealtimeAgent, RealtimeSession, tool } from '@openai/agents-realtime';

const getTime = tool({
  name: 'get_time',
  description: 'The current time of day at the user\'s place.',
  parameters: { type: 'object', properties: {}, required: [], additionalProperties: false },
  strict: true,
  execute: async () => {
    (window as any).app.toolCalls++;
    return 'It is exactly noon.';
  },
});

interface StartOptions {
  /** Parley's base URL (the transport's baseUrl is its calls endpoint). */
  parley: string;
  withTool: boolean;
  /** Give the transport a microphone without echo cancellation (its `mediaStream` option). */
  rawMicrophone: boolean;
}

const app = {
  events: [] as any[],
  history: [] as any[],
  interrupted: 0,
  toolCalls: 0,
  connectMs: 0,
  /** performance.now() when connect() resolved. */
  connectedAt: 0,
  peakLevel: 0,
  session: undefined as RealtimeSession | undefined,
  /** The call's id (the transport reads it from the answer's Location), for a sideband connection. */
  callId: undefined as string | undefined,

  async start(opts: StartOptions) {
    // The app's backend mints the client secret (the server API key stays there).
    const secret = (await (await fetch('/session', { method: 'POST' })).json()) as { value: string };
    const agent = new RealtimeAgent({ name: 'Assistant', instructions: 'You are a helpful assistant.', tools: opts.withTool ? [getTime] : [] });
    const audioElement = document.createElement('audio');
    document.body.append(audioElement);
    const mediaStream = opts.rawMicrophone
      ? await navigator.mediaDevices.getUserMedia({ audio: { echoCancellation: false, noiseSuppression: false, autoGainControl: false } })
      : undefined;
    const transport = new OpenAIRealtimeWebRTC({ baseUrl: `${opts.parley}/v1/realtime/calls`, audioElement, ...(mediaStream ? { mediaStream } : {}) });
    transport.on('*', (e: any) => app.events.push(e));
    const session = new RealtimeSession(agent, { transport, model: 'gpt-realtime' });
    session.on('history_updated', (h) => (app.history = JSON.parse(JSON.stringify(h))));
    session.on('audio_interrupted', () => app.interrupted++);
    app.session = session;
    const t0 = performance.now();
    await session.connect({ apiKey: secret.value });
    app.callId = transport.callId;
    app.connectedAt = performance.now();
    app.connectMs = app.connectedAt - t0;
    app.meter(audioElement);
  },

  /** The loudest the agent's audio has been (RMS, 0–1) since the last reset. */
  meter(audioElement: HTMLAudioElement) {
    const ctx = new AudioContext();
    const analyser = ctx.createAnalyser();
    analyser.fftSize = 2048;
    const data = new Float32Array(analyser.fftSize);
    const attach = () => {
      if (!(audioElement.srcObject instanceof MediaStream)) return setTimeout(attach, 50);
      ctx.createMediaStreamSource(audioElement.srcObject).connect(analyser);
      setInterval(() => {
        analyser.getFloatTimeDomainData(data);
        let sum = 0;
        for (const v of data) sum += v * v;
        app.peakLevel = Math.max(app.peakLevel, Math.sqrt(sum / data.length));
      }, 20);
    };
    attach();
  },

  close() {
    app.session?.close();
  },
};

(window as any).app = app;
