// A web app built with the published React SDK the way its README shows (OrgaAI.init with a
// sessionConfigEndpoint, OrgaAIProvider, useOrgaAI, OrgaAudio, buttons for the session, mic and camera).
// What the tests read is put on window.orga: every SDK callback as it fires, the hook's state after
// each render, and how loud the agent's audio (aiAudioStream) is, measured with an AnalyserNode.
// Bundled by esbuild at test time (test/helpers/orgaSdk.ts); ?voice=NAME sets OrgaAI.init's voice,
// ?video=QUALITY its videoQuality (low takes a 320×240 camera at 15 fps).
import { useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { OrgaAI, OrgaAIProvider, OrgaAudio, useOrgaAI } from '@orga-ai/react';

const voice = new URLSearchParams(location.search).get('voice');
const videoQuality = new URLSearchParams(location.search).get('video');

OrgaAI.init({
  logLevel: 'warn',
  sessionConfigEndpoint: '/api/orga-session',
  enableTranscriptions: true,
  ...(voice ? { voice } : {}),
  ...(videoQuality ? { videoQuality } : {}),
});

const probe = (window.orga = { startedAt: null, events: [], state: {}, audio: { peak: 0, audibleMs: 0 } });
const record = (name, data) => probe.events.push({ name, at: performance.now(), data: data === undefined ? null : JSON.parse(JSON.stringify(data)) });

/** Loudness of the agent's audio as the page plays it. */
function useLoudness(stream) {
  useEffect(() => {
    if (!stream) return undefined;
    const context = new AudioContext();
    const analyser = context.createAnalyser();
    analyser.fftSize = 2048;
    context.createMediaStreamSource(stream).connect(analyser);
    const samples = new Float32Array(analyser.fftSize);
    const every = 50;
    const timer = setInterval(() => {
      analyser.getFloatTimeDomainData(samples);
      let sum = 0;
      for (const s of samples) sum += s * s;
      const rms = Math.sqrt(sum / samples.length);
      probe.audio.peak = Math.max(probe.audio.peak, rms);
      if (rms > 0.01) probe.audio.audibleMs += every;
    }, every);
    return () => {
      clearInterval(timer);
      void context.close();
    };
  }, [stream]);
}

function Call() {
  const {
    startSession,
    endSession,
    enableMic,
    toggleMic,
    toggleCamera,
    connectionState,
    conversationItems,
    conversationId,
    aiAudioStream,
    isMicOn,
    isCameraOn,
    modalities,
    voice: sessionVoice,
  } = useOrgaAI();
  const [error, setError] = useState(null);

  useEffect(() => {
    probe.state = { connectionState, conversationId, conversationItems, isMicOn, isCameraOn, modalities, voice: sessionVoice, hasAiAudioStream: !!aiAudioStream };
  });
  useLoudness(aiAudioStream);

  const handleStart = async () => {
    probe.startedAt = performance.now();
    try {
      await startSession({
        onSessionStart: () => record('onSessionStart'),
        onSessionConnected: () => record('onSessionConnected'),
        onSessionCreated: (event) => record('onSessionCreated', event),
        onConversationCreated: (event) => record('onConversationCreated', event),
        onConversationMessageCreated: (item) => record('onConversationMessageCreated', item),
        onConnectionStateChange: (state) => record('onConnectionStateChange', state),
        onSessionEnd: () => record('onSessionEnd'),
        onError: (err) => record('onError', String(err?.message ?? err)),
      });
      record('startSession resolved');
    } catch (err) {
      setError(String(err?.message ?? err));
      record('startSession rejected', String(err?.message ?? err));
    }
  };
  const act = (name, fn) => async () => {
    try {
      await fn();
      record(`${name} done`);
    } catch (err) {
      record(`${name} failed`, String(err?.message ?? err));
    }
  };

  return (
    <main>
      <h1>Orga SDK against Parley</h1>
      <p id="status">Status: {connectionState}</p>
      {error && <p id="error">{error}</p>}
      <button id="start" onClick={handleStart} disabled={connectionState === 'connected' || connectionState === 'connecting'}>
        {connectionState === 'connecting' ? 'Connecting...' : 'Start Session'}
      </button>
      <button id="end" onClick={act('endSession', endSession)} disabled={connectionState !== 'connected'}>End Session</button>
      <button id="enable-mic" onClick={act('enableMic', enableMic)}>Enable mic</button>
      <button id="toggle-mic" onClick={act('toggleMic', toggleMic)}>{isMicOn ? 'Mic On' : 'Mic Off'}</button>
      <button id="toggle-camera" onClick={act('toggleCamera', toggleCamera)}>{isCameraOn ? 'Camera On' : 'Camera Off'}</button>
      <ul id="conversation">
        {conversationItems.map((item, i) => (
          <li key={i}>
            {item.sender}: {item.content.message}
          </li>
        ))}
      </ul>
      <OrgaAudio stream={aiAudioStream} />
    </main>
  );
}

createRoot(document.getElementById('root')).render(
  <OrgaAIProvider>
    <Call />
  </OrgaAIProvider>,
);
