// The console page: four tabs over the /console/api routes. The session is an HttpOnly cookie the
// page never sees; an answer of 401 (logged out, expired) sends it back to the login form.
const $ = (id) => document.getElementById(id);
/** Requests that change something carry the console's header (the server refuses them without). */
const CHANGE_HEADERS = { 'content-type': 'application/json', 'x-parley-console': '1' };

class LoggedOut extends Error {}

async function api(path, init = {}) {
  const res = await fetch(`/console/api${path}`, { ...init, credentials: 'same-origin' });
  if (res.status === 401) {
    location.assign('/console/login');
    throw new LoggedOut();
  }
  const body = res.status === 204 ? null : await res.json().catch(() => null);
  if (!res.ok) throw Object.assign(new Error(body?.error?.message ?? `${path} answered ${res.status}`), { status: res.status });
  return body;
}

const change = (path, body) => api(path, { method: 'POST', headers: CHANGE_HEADERS, body: JSON.stringify(body ?? {}) });

function showProblem(err) {
  if (err instanceof LoggedOut) return;
  $('problem').textContent = err.message;
  $('problem').hidden = false;
}

function clearProblem() {
  $('problem').hidden = true;
}

/** An element with attributes and children (strings become text: nothing is parsed as HTML). */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === 'onclick') node.addEventListener('click', value);
    else if (value !== undefined && value !== null) node.setAttribute(name, value);
  }
  for (const child of children) node.append(child ?? '');
  return node;
}

const time = (iso) => (iso ? new Date(iso).toLocaleString() : '–');
const seconds = (s) => {
  const whole = Math.floor(s);
  return `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, '0')}`;
};
const orDash = (v, unit = '') => (v === null || v === undefined ? '–' : `${v}${unit}`);

/** A call's quality in a line: what its wire measures (null fields are not measurable there). */
function qualityLine(q) {
  if (!q) return '–';
  const parts = [`connected in ${q.time_to_connected_ms} ms`];
  if (q.inbound.loss_pct !== null) parts.push(`loss ${q.inbound.loss_pct}%`);
  if (q.inbound.jitter_p95_ms !== null) parts.push(`jitter p95 ${q.inbound.jitter_p95_ms} ms`);
  if (q.rtt_ms.p50 !== null) parts.push(`rtt ${q.rtt_ms.p50} ms`);
  parts.push(`in ${orDash(q.inbound.bitrate_kbps, ' kbps')}`, `out ${orDash(q.outbound.bitrate_kbps, ' kbps')}`);
  return parts.join(' · ');
}

function usageLine(u) {
  if (!u) return '–';
  const video = u.video_frames_received ? ` · camera ${u.video_frames_received} frames, ${u.video_frames_to_model ?? 0} to the model` : '';
  return `caller ${u.caller_audio_s} s · agent ${u.agent_audio_s} s · tokens ${u.input_tokens}/${u.output_tokens}${video}`;
}

// Live calls: polled every second. A call that leaves the list has ended; its record says how.

const ENDED_KEPT = 20;
/** Calls seen live, by id, with the last view of each. */
const seenCalls = new Map();
/** Ended calls (newest first): their last live view and their record's end. */
let endedCalls = [];

function callRow(call, ended) {
  const state = ended ? `${ended.state}${ended.end_reason ? ` (${ended.end_reason})` : ''}` : call.state;
  return el(
    'tr',
    { 'data-call': call.id, class: ended ? 'ended' : 'live' },
    el('td', {}, el('a', { href: `#conversation=${call.id}` }, call.id)),
    el('td', {}, call.api_key_id),
    el('td', { class: 'state' }, state),
    el('td', {}, call.transport),
    el('td', { class: 'model' }, call.model ?? ''),
    el('td', {}, time(call.started_at)),
    el('td', {}, seconds(ended?.ended_at ? (Date.parse(ended.ended_at) - Date.parse(ended.created_at)) / 1000 : call.duration_s)),
    el('td', {}, qualityLine(ended ? (ended.quality ?? call.quality) : call.quality)),
    el('td', {}, usageLine(ended ? (ended.usage ?? call.usage) : call.usage)),
  );
}

async function refreshCalls() {
  const { node_id: nodeId, calls } = await api('/calls');
  $('node-id').textContent = nodeId;
  const live = new Set(calls.map((c) => c.id));
  for (const [id, last] of seenCalls) {
    if (live.has(id)) continue;
    seenCalls.delete(id);
    const record = await api(`/conversations/${encodeURIComponent(id)}`).catch(() => null);
    endedCalls = [{ call: last, record: record ?? { state: 'ended', end_reason: null } }, ...endedCalls].slice(0, ENDED_KEPT);
  }
  for (const call of calls) seenCalls.set(call.id, call);
  // A record fetched while its end was still being written is asked again.
  for (const ended of endedCalls) {
    if (ended.record.state === 'connecting' || ended.record.state === 'active') ended.record = await api(`/conversations/${encodeURIComponent(ended.call.id)}`);
  }
  $('calls-rows').replaceChildren(...calls.map((c) => callRow(c)), ...endedCalls.map((e) => callRow(e.call, e.record)));
  $('calls-empty').hidden = calls.length > 0;
}

async function pollCalls() {
  try {
    await refreshCalls();
    clearProblem();
  } catch (err) {
    showProblem(err);
    if (err instanceof LoggedOut) return;
  }
  setTimeout(pollCalls, 1000);
}

// Conversations: newest first, a page at a time; one opened shows its record and transcript.

let olderCursor = null;

async function loadConversations(after) {
  const page = await api(`/conversations${after ? `?after=${encodeURIComponent(after)}` : ''}`);
  olderCursor = page.next;
  $('conversations-older').disabled = !olderCursor;
  $('conversations-rows').replaceChildren(
    ...page.data.map((c) =>
      el(
        'tr',
        { 'data-conversation': c.id },
        el('td', {}, el('a', { href: `#conversation=${c.id}` }, c.id)),
        el('td', {}, c.api_key_id),
        el('td', { class: 'state' }, c.end_reason ? `${c.state} (${c.end_reason})` : c.state),
        el('td', {}, time(c.created_at)),
        el('td', {}, time(c.ended_at)),
        el('td', {}, orDash(c.node_id)),
      ),
    ),
  );
}

function fields(list, entries) {
  list.replaceChildren(...entries.flatMap(([name, value]) => [el('dt', {}, name), el('dd', {}, value)]));
}

async function openConversation(id) {
  const c = await api(`/conversations/${encodeURIComponent(id)}`);
  $('conversation-id').textContent = c.id;
  fields($('conversation-fields'), [
    ['State', c.end_reason ? `${c.state} (${c.end_reason})` : c.state],
    ['API key', c.api_key_id],
    ['Thread', c.thread_id],
    ['End user', orDash(c.end_user)],
    ['Node', orDash(c.node_id)],
    ['Created', time(c.created_at)],
    ['Connected', time(c.connected_at)],
    ['Ended', time(c.ended_at)],
    ['Model', orDash(c.params.model)],
    ['Voice', orDash(c.params.voice)],
  ]);
  fields($('conversation-figures'), [
    ['Quality', qualityLine(c.quality)],
    ['Usage', usageLine(c.usage)],
  ]);
  // The recording, where the record says the call has one.
  const player = $('recording-player');
  $('conversation-recording').hidden = !c.recording;
  if (c.recording) player.src = `/console/api/conversations/${encodeURIComponent(c.id)}/recording`;
  else player.removeAttribute('src');
  $('transcript').replaceChildren(
    ...(c.items.length
      ? c.items.map((t) =>
          el('li', { class: t.role }, el('span', { class: 'role' }, t.role), ' ', t.text, ...(t.image?.startsWith('data:image/jpeg;base64,') ? [' ', el('img', { class: 'turn-image', src: t.image, alt: 'the picture this turn showed the model' })] : [])),
        )
      : [el('li', { class: 'empty' }, 'No turns recorded.')]),
  );
  $('conversation').hidden = false;
}

// API keys: created keys are shown once; revoked ones stay listed.

async function loadKeys() {
  const { data } = await api('/keys');
  $('keys-rows').replaceChildren(
    ...data.map((k) =>
      el(
        'tr',
        { 'data-key': k.id, 'data-key-name': k.name },
        el('td', {}, k.id),
        el('td', {}, k.name),
        el('td', {}, `${k.prefix}…`),
        el('td', {}, time(k.created_at)),
        el('td', {}, time(k.last_used_at)),
        el('td', { class: 'usage' }, `${k.usage_30d.calls} calls · ${k.usage_30d.input_tokens} in / ${k.usage_30d.output_tokens} out tokens`),
        el('td', { class: 'status' }, k.revoked_at ? `revoked ${time(k.revoked_at)}` : 'active'),
        el('td', {}, k.revoked_at ? '' : el('button', { type: 'button', class: 'revoke', onclick: () => revokeKey(k) }, 'Revoke')),
      ),
    ),
  );
}

async function revokeKey(key) {
  if (!confirm(`Revoke ${key.name} (${key.id})? Its tokens stop working and its live calls end.`)) return;
  await change(`/keys/${encodeURIComponent(key.id)}/revoke`).catch(showProblem);
  await loadKeys().catch(showProblem);
}

$('key-create').addEventListener('submit', async (event) => {
  event.preventDefault();
  try {
    const created = await change('/keys', { name: event.target.name.value });
    $('key-created-value').textContent = created.key;
    $('key-created').hidden = false;
    event.target.reset();
    await loadKeys();
  } catch (err) {
    showProblem(err);
  }
});

// Webhooks: endpoints and deliveries, from the route that serves them (absent on a server without).

function table(rows) {
  if (!rows.length) return el('p', { class: 'empty' }, 'None.');
  const columns = Object.keys(rows[0]);
  const cell = (v) => (v !== null && typeof v === 'object' ? JSON.stringify(v) : orDash(v));
  return el(
    'table',
    {},
    el('thead', {}, el('tr', {}, ...columns.map((c) => el('th', {}, c)))),
    el('tbody', {}, ...rows.map((r) => el('tr', {}, ...columns.map((c) => el('td', {}, cell(r[c])))))),
  );
}

async function loadWebhooks() {
  const content = $('webhooks-content');
  try {
    const data = await api('/webhooks');
    content.replaceChildren(...Object.entries(data).filter(([, rows]) => Array.isArray(rows)).flatMap(([name, rows]) => [el('h3', {}, name), table(rows)]));
  } catch (err) {
    if (err.status !== 404) throw err;
    content.replaceChildren(el('p', { class: 'empty' }, 'Webhooks are not available on this server.'));
  }
}

// Tabs, and the address's #conversation=<id> opening one.

const loaders = { calls: async () => {}, conversations: () => loadConversations(), keys: loadKeys, webhooks: loadWebhooks };

function showTab(name) {
  for (const button of document.querySelectorAll('nav button')) {
    if (button.dataset.tab === name) button.setAttribute('aria-current', 'page');
    else button.removeAttribute('aria-current');
  }
  for (const tab of Object.keys(loaders)) $(tab).hidden = tab !== name;
  return loaders[name]().then(clearProblem, showProblem);
}

for (const button of document.querySelectorAll('nav button')) button.addEventListener('click', () => void showTab(button.dataset.tab));

async function followAddress() {
  const id = /^#conversation=(.+)$/.exec(location.hash)?.[1];
  if (!id) return;
  await showTab('conversations');
  await openConversation(decodeURIComponent(id)).catch(showProblem);
}

window.addEventListener('hashchange', () => void followAddress());
$('conversations-newest').addEventListener('click', () => void loadConversations().catch(showProblem));
$('conversations-older').addEventListener('click', () => void loadConversations(olderCursor).catch(showProblem));
$('logout').addEventListener('click', async () => {
  await fetch('/console/logout', { method: 'POST', headers: CHANGE_HEADERS, body: '{}' });
  location.assign('/console/login');
});

void pollCalls();
void followAddress();
