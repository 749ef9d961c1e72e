// The demo page: model and voice pickers, Talk / Hang up, connection state, transcript, events.
// `window.parleyDemo` exposes what the page has seen (events, state, audio statistics) so automated
// browser tests can check it; it holds no credential beyond the short-lived call token in memory.
import { fetchCatalog, inboundAudio, micLevel, outboundAudio, outboundVideo, requestSession, startCall } from './call.js';

const $ = (id) => document.getElementById(id);
const ui = {
  status: $('status'),
  statusText: $('status-text'),
  model: $('model'),
  voice: $('voice'),
  camera: $('camera'),
  modelDescription: $('model-description'),
  talk: $('talk'),
  hangup: $('hangup'),
  micLevel: $('mic-level'),
  agentLevel: $('agent-level'),
  conversationId: $('conversation-id'),
  sessionSummary: $('session-summary'),
  audioStats: $('audio-stats'),
  audio: $('agent-audio'),
  transcript: $('transcript'),
  events: $('events'),
};

const LANGUAGES = { en: 'English', es: 'Spanish', fr: 'French', it: 'Italian', pt: 'Portuguese' };
const STATS_INTERVAL_MS = 500;

const page = { state: 'idle', attempt: 0, events: [], conversationId: null, session: null, call: null, mic: null, statsTimer: null, models: [] };

window.parleyDemo = {
  get state() {
    return page.state;
  },
  get conversationId() {
    return page.conversationId;
  },
  get session() {
    return page.session;
  },
  events: page.events,
  inboundAudio: () => (page.call ? inboundAudio(page.call.pc) : Promise.resolve(null)),
  outboundAudio: () => (page.call ? outboundAudio(page.call.pc) : Promise.resolve(null)),
  outboundVideo: () => (page.call ? outboundVideo(page.call.pc) : Promise.resolve(null)),
};

function setState(state, detail = '') {
  page.state = state;
  ui.status.dataset.state = state;
  ui.statusText.textContent = detail ? `${state} — ${detail}` : state;
  ui.status.title = ui.statusText.textContent;
  const live = page.call !== null || ['starting', 'gathering', 'offering', 'connecting', 'connected'].includes(state);
  ui.talk.disabled = live || ui.model.disabled;
  // The camera goes with the call from its start (the offer carries its track).
  ui.camera.disabled = live;
  ui.talk.textContent = live ? 'On a call' : 'Talk';
  ui.hangup.disabled = !live;
}

// Replies may carry markup for the speech engine (`<emotion value="happy"/>`, `[laughter]`),
// which the existing clients strip before showing text.
function readable(text) {
  return String(text ?? '').replace(/<[^>]*>/g, '').replace(/\[[a-z _-]+\]/gi, '').replace(/\s+/g, ' ').trim();
}

function addBubble(role, text) {
  ui.transcript.querySelector('.empty')?.remove();
  const li = document.createElement('li');
  li.className = `bubble ${role}`;
  li.dataset.role = role;
  const who = document.createElement('span');
  who.className = 'who';
  who.textContent = { user: 'You', agent: 'Agent', error: 'Error', system: 'Call' }[role];
  const body = document.createElement('span');
  body.className = 'text';
  body.textContent = text;
  li.append(who, body);
  ui.transcript.append(li);
  ui.transcript.scrollTop = ui.transcript.scrollHeight;
  return body;
}

let agentDraft = null;

function showInTranscript(event) {
  switch (event.type) {
    case 'conversation.item.input_audio_transcription.completed':
      addBubble('user', readable(event.transcript));
      break;
    case 'response.text.delta':
      agentDraft ??= addBubble('agent', '');
      agentDraft.textContent += event.delta ?? '';
      break;
    case 'response.output_item.done':
      (agentDraft ?? addBubble('agent', '')).textContent = readable(event.text);
      agentDraft = null;
      break;
    case 'response.interrupted':
      if (agentDraft) agentDraft.textContent += ' …';
      agentDraft = null;
      break;
    case 'error':
      addBubble('error', `${event.error?.message ?? 'error'}${event.error?.code ? ` (${event.error.code})` : ''}`);
      break;
    case 'session.ended':
      addBubble('system', `ended: ${event.reason}`);
      break;
  }
}

function summary(event) {
  switch (event.type ?? event.event) {
    case 'session.created':
    case 'session.updated':
      return `${event.session?.model} · ${event.session?.voice}`;
    case 'conversation.created':
      return event.conversation?.id ?? '';
    case 'response.text.delta':
      return JSON.stringify(event.delta ?? '');
    case 'response.output_item.done':
      return readable(event.text);
    case 'conversation.item.input_audio_transcription.completed':
      return readable(event.transcript);
    case 'error':
      return `${event.error?.code ?? ''} ${event.error?.message ?? ''}`.trim();
    case 'session.ended':
      return event.reason ?? '';
    case 'session.update':
      return JSON.stringify(event.data ?? event.session ?? {});
    default:
      return '';
  }
}

function logEvent(direction, event) {
  const li = document.createElement('li');
  li.dataset.type = event.type ?? event.event ?? '';
  li.className = direction;
  const time = document.createElement('time');
  time.textContent = new Date().toLocaleTimeString([], { hour12: false });
  const type = document.createElement('code');
  type.textContent = `${direction === 'out' ? '→' : '←'} ${li.dataset.type}`;
  const text = document.createElement('span');
  text.textContent = summary(event);
  li.append(time, type, text);
  ui.events.prepend(li);
}

function onEvent(event) {
  page.events.push(event);
  logEvent('in', event);
  if (event.type === 'session.created' || event.type === 'session.updated') {
    page.session = event.session;
    ui.sessionSummary.textContent = `${event.session.model} · ${event.session.voice}`;
  }
  showInTranscript(event);
  if (event.type === 'session.ended') finish('ended', event.reason);
}

function send(message) {
  if (!page.call) return;
  page.call.send(message);
  logEvent('out', message);
}

async function pollStats() {
  if (!page.call) return;
  const pc = page.call.pc;
  const [inbound, mic] = await Promise.all([inboundAudio(pc), micLevel(pc)]).catch(() => [null, 0]);
  if (!inbound) return;
  ui.agentLevel.style.width = `${Math.min(100, Math.sqrt(inbound.audioLevel) * 140)}%`;
  ui.micLevel.style.width = `${Math.min(100, Math.sqrt(mic) * 140)}%`;
  ui.audioStats.textContent = `${inbound.packetsReceived} packets · ${inbound.packetsLost} lost · jitter ${Math.round(inbound.jitter * 1000)} ms`;
}

function endCall(state, detail) {
  clearInterval(page.statsTimer);
  page.call?.hangUp();
  page.call = null;
  page.mic?.getTracks().forEach((t) => t.stop());
  page.mic = null;
  ui.audio.srcObject = null;
  ui.micLevel.style.width = ui.agentLevel.style.width = '0%';
  setState(state, detail);
}

function selectedModel() {
  return page.models.find((m) => m.id === ui.model.value);
}

async function talk() {
  if (page.call) return;
  // Each attempt has a number: pressing Hang up while the call is being set up abandons it.
  const attempt = ++page.attempt;
  const current = () => attempt === page.attempt;
  setState('starting', 'microphone');
  try {
    if (!navigator.mediaDevices?.getUserMedia) throw new Error('this page needs a secure origin (https or localhost) for the microphone');
    // With the camera on, the agent is sent the camera's picture at the end of each turn (vision).
    page.mic = await navigator.mediaDevices.getUserMedia({ audio: { echoCancellation: true, noiseSuppression: true }, video: ui.camera.checked });
    if (!current()) return page.mic.getTracks().forEach((t) => t.stop());
    setState('starting', 'token');
    const { ephemeralToken, iceServers } = await requestSession();
    if (!current()) return;
    const call = await startCall({
      token: ephemeralToken,
      iceServers,
      micTrack: page.mic.getAudioTracks()[0],
      cameraTrack: page.mic.getVideoTracks()[0],
      params: {
        model: ui.model.value,
        voice: ui.voice.value,
        temperature: 0.5,
        return_transcription: true,
        instructions: null,
        modalities: ui.camera.checked ? ['audio', 'video'] : ['audio'],
        history: true,
      },
      on: {
        event: onEvent,
        stream: (stream) => {
          ui.audio.srcObject = stream;
          ui.audio.play().catch(() => {});
        },
        state: (state) => {
          if (!current() || state === 'closed') return;
          if (state === 'failed' || state === 'disconnected') return finish('failed', `connection ${state}`);
          if (state === 'connected' && page.state !== 'connected') addBubble('system', `connected to ${ui.model.value}, say something`);
          setState(state);
        },
      },
    });
    if (!current()) return call.hangUp();
    page.call = call;
    page.conversationId = call.conversationId;
    ui.conversationId.textContent = call.conversationId;
    page.statsTimer = setInterval(pollStats, STATS_INTERVAL_MS);
    if (page.state !== 'connected') setState('connecting');
  } catch (err) {
    if (!current()) return;
    finish('failed', err.message);
    addBubble('error', err.message);
  }
}

/** Ends the current call (or the one being set up) for good. */
function finish(state, detail) {
  page.attempt++;
  endCall(state, detail);
}

function hangUp() {
  finish('ended', 'you hung up');
  addBubble('system', 'you hung up');
}

// Changing voice or model during a call updates the live session (session.update).
function onPickerChange(field) {
  if (field === 'model') ui.modelDescription.textContent = selectedModel()?.description ?? '';
  if (page.call) send({ event: 'session.update', data: { [field]: ui[field].value } });
}

function fillPickers({ models, voices }) {
  page.models = models.models;
  ui.model.replaceChildren(...models.models.map((m) => new Option(m.id, m.id, false, m.id === models.default)));
  const groups = new Map();
  for (const v of voices.voices) {
    if (!groups.has(v.lang)) {
      const group = document.createElement('optgroup');
      group.label = LANGUAGES[v.lang] ?? v.lang;
      groups.set(v.lang, group);
    }
    groups.get(v.lang).append(new Option(`${v.name} (${v.gender})`, v.name, false, v.name === voices.default));
  }
  ui.voice.replaceChildren(...groups.values());
  ui.model.disabled = ui.voice.disabled = false;
  ui.modelDescription.textContent = selectedModel()?.description ?? '';
}

async function init() {
  ui.talk.addEventListener('click', talk);
  ui.hangup.addEventListener('click', hangUp);
  ui.model.addEventListener('change', () => onPickerChange('model'));
  ui.voice.addEventListener('change', () => onPickerChange('voice'));
  try {
    const { ephemeralToken } = await requestSession();
    fillPickers(await fetchCatalog(ephemeralToken));
    setState('idle');
  } catch (err) {
    setState('failed', `could not load models and voices: ${err.message}`);
  }
}

init();
