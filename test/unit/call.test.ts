// The call without WebRTC: a fake transport drives its lifecycle, its protocol and its agent; the
// lifecycle's grace for an interrupted transport; a stage failure told once to every listener.
import assert from 'node:assert/strict';
import { mock, test } from 'node:test';
import { echoAgentFactory } from '../../src/agent/echoAgent.ts';
import type { Agent, AgentContext, AgentFactory } from '../../src/agent/types.ts';
import { Call, type CallObserver } from '../../src/calls/call.ts';
import { callLog, callMetrics } from '../../src/calls/callObservers.ts';
import { CallLifecycle } from '../../src/calls/lifecycle.ts';
import { orgaProtocol } from '../../src/calls/protocol/orga.ts';
import type { EventAudio, EventAudioTransport, MediaTrackTransport, MessageChannel, TransportEvents } from '../../src/calls/transport.ts';
import { bytesOnlyQuality } from '../../src/calls/callFigures.ts';
import { Metrics } from '../../src/observability/metrics.ts';
import { Conversation } from '../../src/session/conversation.ts';
import { defaultSession, type Session } from '../../src/session/session.ts';
import { chooserOf, FakeAudioOut } from '../helpers/agentFakes.ts';

/** What the fake wires share: the events they were given, the rates asked for, how they were closed. */
abstract class FakeWire {
  readonly kind = 'fake';
  readonly audioOut = new FakeAudioOut();
  events!: TransportEvents;
  inputRates: number[] = [];
  closedWith: string | undefined;
  attach(events: TransportEvents): void {
    this.events = events;
  }
  setInputRate(rate: number): void {
    this.inputRates.push(rate);
  }
  quality() {
    return bytesOnlyQuality({ bytes: 0, seconds: 0 }, { bytes: 0, seconds: 0 });
  }
  async close(reason: string): Promise<void> {
    this.closedWith = reason;
  }
}

class FakeTransport extends FakeWire implements MediaTrackTransport {
  constructor(readonly offers: MediaTrackTransport['offers'] = { mediaTrack: true, clientChannel: true }) {
    super();
  }
}

/** A wire with no media track: audio travels inside the client's events. */
class FakeEventAudioTransport extends FakeWire implements EventAudioTransport {
  readonly offers = { mediaTrack: false, clientChannel: true } as const;
  readonly appended: string[] = [];
  readonly encodings: (string | undefined)[] = [];
  output: (audio: string) => void = () => {};
  readonly eventAudio: EventAudio = {
    sessionChanged: (s) => void this.encodings.push(s.outputAudio),
    append: (audio) => void this.appended.push(audio),
    onOutput: (send) => void (this.output = send),
  };
}

class FakeChannel implements MessageChannel {
  readonly label = 'fake-events';
  readonly sent: Record<string, any>[] = [];
  private receive: (text: string) => void = () => {};
  send(text: string): boolean {
    this.sent.push(JSON.parse(text));
    return true;
  }
  onMessage(cb: (text: string) => void): void {
    this.receive = cb;
  }
  onClose(): void {}
  close(): void {}
  /** The client sends a message. */
  client(message: object): void {
    this.receive(JSON.stringify(message));
  }
  types(): string[] {
    return this.sent.map((m) => m.type);
  }
}

/** A logger that keeps what it is told. */
function recordingLog() {
  const lines: { level: string; fields: Record<string, unknown>; msg: string }[] = [];
  const at = (level: string) => (fields: Record<string, unknown>, msg: string) => void lines.push({ level, fields, msg });
  const log = { info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug'), trace: at('trace'), fatal: at('fatal'), child: () => log };
  return { log: log as never, lines };
}

const session: Session = defaultSession({
  turnDetection: { type: 'server_vad', threshold: 0.5, prefixPaddingMs: 300, silenceMs: 500, idleTimeoutMs: null, createResponse: true, interruptResponse: true },
});
const timeouts = { connectTimeoutMs: 10_000, idleTimeoutMs: 60_000, maxDurationMs: 3_600_000, reconnectGraceMs: 5_000 };
const rates = { messagesPerSecond: 50, repliesPerSecond: 2, sidebands: 4 };

function makeCall<T extends FakeTransport | FakeEventAudioTransport = FakeTransport>(agent: AgentFactory, observer: CallObserver = {}, transport: T = new FakeTransport() as T) {
  const { log, lines } = recordingLog();
  const call = new Call({
    id: 'conv_fake',
    apiKeyId: 'key_1',
    transport,
    session,
    conversation: new Conversation(),
    models: chooserOf(() => agent),
    protocol: orgaProtocol(['orga-1-beta', 'parley-offline', 'fast', 'slow']),
    timeouts,
    rates,
    log,
  });
  call.observe(observer);
  return { call, transport, lines };
}

test('a call runs its lifecycle, protocol and agent on a transport that is not WebRTC', async () => {
  const seen: string[] = [];
  const { call, transport } = makeCall(echoAgentFactory(0), {
    connected: () => void seen.push('connected'),
    ended: async (c) => void seen.push(`ended:${c.state}:${c.endReason}`),
  });
  assert.deepEqual(transport.inputRates, [48_000], 'the echo agent hears at the call rate');
  assert.equal(call.state, 'connecting');
  transport.events.connected();
  assert.equal(call.state, 'active');
  const channel = new FakeChannel();
  transport.events.channel(channel);
  assert.ok(channel.types().includes('session.created'), 'the protocol greets on the channel');
  transport.events.audio(new Int16Array(960).fill(500));
  assert.ok(transport.audioOut.writtenMs >= 20, 'the agent heard the frame and answered into audioOut');
  channel.client({ type: 'session.end' });
  await call.end('unused');
  assert.equal(transport.closedWith, 'session_end');
  assert.equal(channel.sent.at(-1)!.type, 'session.ended');
  assert.deepEqual(seen, ['connected', 'ended:ended:session_end']);
});

test('a wire without a client channel (a phone) keeps no backlog of events; one with a channel is told what came before it opened', async () => {
  let ctx!: AgentContext;
  const quiet: AgentFactory = {
    create: (c) => {
      ctx = c;
      return { inputSampleRate: 16_000, onAudio: () => {}, onSessionUpdate: () => {}, close: () => {} } as unknown as Agent;
    },
  };
  const told = async (offers: MediaTrackTransport['offers']) => {
    const { call, transport } = makeCall(quiet, {}, new FakeTransport(offers));
    transport.events.connected();
    ctx.emit({ type: 'response.text.delta', responseId: 'resp_1', itemId: 'item_1', outputIndex: 0, audio: false, delta: 'before the channel' });
    // A channel the wire said it would not have: it shows what was kept for it.
    const channel = new FakeChannel();
    transport.events.channel(channel);
    await call.end('test');
    return channel.types().filter((t) => t === 'response.text.delta').length;
  };
  assert.equal(await told({ mediaTrack: true, clientChannel: true }), 1);
  assert.equal(await told({ mediaTrack: true, clientChannel: false }), 0);
});

test('a wire with no media track carries audio inside events: the client\'s appended, the agent\'s sent as output_audio.delta, the session\'s encodings followed', async () => {
  const events: string[] = [];
  const { call, transport } = makeCall(echoAgentFactory(0), { event: (_c, e) => void events.push(e.type) }, new FakeEventAudioTransport());
  assert.equal(call.audioInEvents, true);
  assert.equal(call.appendInputAudio('AAAA'), true);
  assert.deepEqual(transport.appended, ['AAAA']);
  transport.output('BBBB');
  assert.ok(events.includes('output_audio.delta'));
  call.updateSession({ ...session, outputAudio: 'pcmu' });
  assert.deepEqual(transport.encodings, [undefined, 'pcmu'], 'told the session at the start and at each change');
  await call.end('test');

  const media = makeCall(echoAgentFactory(0));
  assert.equal(media.call.audioInEvents, false);
  assert.equal(media.call.appendInputAudio('AAAA'), false, 'a wire with a media track takes no audio inside events');
  await media.call.end('test');
});

test('the transport delivers audio at the rate the agent declares, and again after a model switch', () => {
  const heard: number[] = [];
  const agentAt = (rate: number): AgentFactory => ({
    create: (_ctx: AgentContext) =>
      ({ inputSampleRate: rate, onAudio: (f: Int16Array) => heard.push(f.length), onSessionUpdate: () => {}, close: () => {} }) as unknown as Agent,
  });
  const slow = agentAt(16_000);
  const fast = agentAt(48_000);
  const transport = new FakeTransport();
  const call = new Call({
    id: 'conv_rates',
    apiKeyId: 'key_1',
    transport,
    session,
    conversation: new Conversation(),
    models: chooserOf((model) => (model === 'fast' ? fast : slow)),
    protocol: orgaProtocol(['orga-1-beta', 'parley-offline', 'fast', 'slow']),
    timeouts,
    rates,
    log: recordingLog().log,
  });
  call.updateSession({ ...session, model: 'fast' });
  assert.deepEqual(transport.inputRates, [16_000, 48_000]);
  void call.end('test');
});

test('a stage failure is told once: the client error event, one log line, one metric count', async () => {
  const metrics = new Metrics();
  let ctx!: AgentContext;
  const failing: AgentFactory = {
    create: (c) => {
      ctx = c;
      return { inputSampleRate: 16_000, onAudio: () => {}, onSessionUpdate: () => {}, close: () => {} } as unknown as Agent;
    },
  };
  const { call, transport, lines } = makeCall(failing);
  call.observe(callMetrics(metrics));
  const { log, lines: logLines } = recordingLog();
  call.observe(callLog(log));
  transport.events.connected();
  const channel = new FakeChannel();
  transport.events.channel(channel);
  ctx.emit({ type: 'stage.failed', stage: 'stt', code: 'transcription_failed', message: 'Speech recognition failed: worker died', recoverable: true, cause: new Error('worker died') });
  const errors = channel.sent.filter((m) => m.type === 'error');
  assert.equal(errors.length, 1);
  assert.deepEqual([errors[0]!.error.type, errors[0]!.error.code], ['server_error', 'transcription_failed']);
  const warned = logLines.filter((l) => l.msg === 'call stage failed');
  assert.equal(warned.length, 1);
  assert.deepEqual([warned[0]!.level, warned[0]!.fields.stage, (warned[0]!.fields.err as Error).message], ['warn', 'stt', 'worker died']);
  const counted = (await metrics.stageFailures.get()).values.find((v) => v.labels.stage === 'stt');
  assert.equal(counted?.value, 1);
  assert.equal(call.state, 'active', 'a recoverable failure leaves the call going');
  assert.equal(lines.filter((l) => l.level === 'error').length, 0);
  await call.end('test');
});

test('a media failure is told once and ends the call (failed, media_failed)', async () => {
  const metrics = new Metrics();
  const { call, transport } = makeCall(echoAgentFactory(0));
  call.observe(callMetrics(metrics));
  const { log, lines } = recordingLog();
  call.observe(callLog(log));
  transport.events.connected();
  const channel = new FakeChannel();
  transport.events.channel(channel);
  transport.events.failure(new Error('encoder broke'));
  await call.end('unused');
  assert.deepEqual([call.state, call.endReason], ['failed', 'media_failed']);
  assert.deepEqual(channel.sent.filter((m) => m.type === 'error').map((m) => m.error.code), ['media_failed']);
  assert.equal(lines.filter((l) => l.msg.startsWith('call stage failed')).length, 1);
  assert.equal((await metrics.stageFailures.get()).values.find((v) => v.labels.stage === 'media')?.value, 1);
});

test("a flooding client: events past the burst are dropped unread with one error a second; replies past theirs are refused; the call goes on", async () => {
  let replies = 0;
  const counting: AgentFactory = {
    create: () =>
      ({
        inputSampleRate: 16_000,
        onAudio: () => {},
        onSessionUpdate: () => {},
        createResponse: () => (replies++, { ok: true }),
        clearOutputAudio: () => {},
        close: () => {},
      }) as unknown as Agent,
  };
  const { call, transport } = makeCall(counting);
  transport.events.connected();
  const channel = new FakeChannel();
  transport.events.channel(channel);
  const greeting = channel.sent.length;
  // 500 typed messages at once: each would be a reply. The buckets refill while the loop runs (a
  // loaded machine takes tens of milliseconds), so each count may exceed its burst by that refill.
  const started = performance.now();
  for (let i = 0; i < 500; i++) channel.client({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: `hello ${i}` }] } });
  const refill = (perSecond: number) => Math.ceil(((performance.now() - started) / 1000) * perSecond);
  const told = channel.sent.slice(greeting).filter((m) => m.type === 'error').map((m) => m.error.code);
  const read = call.conversation.items.length;
  assert.ok(read >= 2 * rates.messagesPerSecond && read <= 2 * rates.messagesPerSecond + refill(rates.messagesPerSecond), `a burst of two seconds of events was read (${read})`);
  assert.ok(replies >= 2 * rates.repliesPerSecond && replies <= 2 * rates.repliesPerSecond + refill(rates.repliesPerSecond), `replies past the burst were refused (${replies})`);
  assert.equal(told.filter((c) => c === 'rate_limit_exceeded').length, read - replies + 1, 'each refused reply is told, and the dropped events once');
  assert.equal(call.state, 'active');
  await call.end('test');
});

test('lifecycle: an interrupted active call survives a blip shorter than the grace, and ends connection_lost after it', () => {
  mock.timers.enable({ apis: ['setTimeout', 'setInterval'] });
  try {
    const ends: string[] = [];
    const life = new CallLifecycle({ ...timeouts, reconnectGraceMs: 5_000 }, (state, reason) => ends.push(`${state}:${reason}`));
    life.interrupted();
    mock.timers.tick(6_000);
    assert.deepEqual(ends, [], "while connecting, an interruption is the connect timeout's business");
    assert.equal(life.connected(), true);
    life.interrupted();
    mock.timers.tick(4_999);
    assert.equal(life.resumed(), true, 'back within the grace');
    mock.timers.tick(10_000);
    assert.deepEqual(ends, []);
    assert.equal(life.state, 'active');
    life.interrupted();
    mock.timers.tick(5_000);
    assert.deepEqual(ends, ['ended:connection_lost']);
  } finally {
    mock.timers.reset();
  }
});

test('lifecycle: a transport lost for good ends at once, and the end happens once', () => {
  mock.timers.enable({ apis: ['setTimeout', 'setInterval'] });
  try {
    const ends: string[] = [];
    const life = new CallLifecycle(timeouts, (state, reason) => ends.push(`${state}:${reason}`));
    life.connected();
    life.interrupted();
    life.lost('hangup');
    mock.timers.tick(10_000);
    life.end('ended', 'again');
    assert.deepEqual(ends, ['ended:hangup']);
  } finally {
    mock.timers.reset();
  }
});
