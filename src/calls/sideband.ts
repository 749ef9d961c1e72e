// A call's sideband connections: an app's server beside the client that holds the media. Each speaks
// a protocol of its own on the same call (protocol/openai over a WebSocket), hears every event of
// the call and may give the commands its protocol knows, within the call's message rate. The tools a
// sideband declares are its own: their calls and outputs go to the sidebands only, never to the
// client holding the media. A call has a few at most at once: each hears every event, so their
// number multiplies what the call costs the node.
import type { CallEvent } from '../session/events.js';
import { TokenBucket } from '../system/tokenBucket.js';
import type { CallControl, ClientProtocol, ProtocolFactory } from './protocol/types.js';
import type { MessageChannel } from './transport.js';

export class Sidebands {
  private readonly connections = new Map<ClientProtocol, MessageChannel>();
  /** Tools a sideband declared, and the calls of them the model made. */
  private readonly tools = new Set<string>();
  private readonly toolCalls = new Set<string>();

  constructor(
    private readonly call: CallControl,
    private readonly limits: {
      /** What each sideband may send a second (bursts of two seconds' worth); beyond it messages are dropped. */
      messagesPerSecond: number;
      /** Sidebands the call may have at once; one more is refused. */
      connections: number;
    },
  ) {}

  /**
   * Attaches a sideband connection on `channel`, speaking the protocol `protocolFor` makes; one past
   * the call's limit is told why, in that protocol, and closed.
   */
  attach(channel: MessageChannel, protocolFor: ProtocolFactory): void {
    const protocol = protocolFor(this.control(), (message) => channel.send(JSON.stringify(message)));
    if (this.connections.size >= this.limits.connections) {
      const message = `This call already has ${this.limits.connections} sideband connections, the most it may have at once; close one before opening another.`;
      protocol.deliver({ type: 'error', kind: 'invalid_request_error', code: 'too_many_sidebands', message });
      return channel.close();
    }
    const { messagesPerSecond } = this.limits;
    const rate = new TokenBucket(messagesPerSecond, 2 * messagesPerSecond);
    this.connections.set(protocol, channel);
    channel.onMessage((text) => {
      if (rate.take()) protocol.receive(text);
    });
    channel.onClose(() => this.connections.delete(protocol));
    protocol.opened();
  }

  /** Every event of the call goes to every sideband. */
  deliver(event: CallEvent): void {
    for (const protocol of this.connections.keys()) protocol.deliver(event);
  }

  /** Whether the client holding the media is told `event`: not the calls of tools a sideband declared. */
  forClient(event: CallEvent): boolean {
    if (this.tools.size === 0) return true;
    switch (event.type) {
      case 'item.added':
      case 'item.done':
      case 'response.output_item.added':
      case 'response.output_item.done': {
        const item = event.item;
        if (item.type === 'function_call' && this.tools.has(item.name)) {
          this.toolCalls.add(item.callId);
          return false;
        }
        return !(item.type === 'function_call_output' && this.toolCalls.has(item.callId));
      }
      case 'response.function_call_arguments.delta':
      case 'response.function_call_arguments.done':
        return !this.toolCalls.has(event.callId);
      default:
        return true;
    }
  }

  /** The call ended: each sideband is told why, and its connection closed. */
  ended(reason: string): void {
    for (const [protocol, channel] of this.connections) {
      protocol.ended(reason);
      channel.close();
    }
    this.connections.clear();
  }

  /** The call as a sideband commands it: the same, except that the tools it declares are its own, and it cannot hang up. */
  private control(): CallControl {
    const call = this.call;
    return {
      get id() {
        return call.id;
      },
      get conversation() {
        return call.conversation;
      },
      get audioInEvents() {
        return call.audioInEvents;
      },
      session: () => call.session(),
      updateSession: (next) => {
        const before = new Set(call.session().tools.map((t) => t.name));
        const applied = call.updateSession(next);
        if (applied.ok) for (const tool of next.tools) if (!before.has(tool.name)) this.tools.add(tool.name);
        return applied;
      },
      decodeImage: (bytes) => call.decodeImage(bytes),
      addItem: (item, after, audio) => call.addItem(item, after, audio),
      deleteItem: (id) => call.deleteItem(id),
      truncateItem: (id, ms) => call.truncateItem(id, ms),
      createResponse: (request) => call.createResponse(request),
      cancelResponse: () => call.cancelResponse(),
      rateLimits: () => call.rateLimits?.() ?? [],
      clearOutputAudio: () => call.clearOutputAudio(),
      appendInputAudio: () => false,
      commitInput: () => call.commitInput(),
      clearInput: () => call.clearInput(),
      // A sideband leaving is not the caller hanging up.
      end: () => {},
      logFailure: (err) => call.logFailure(err),
    };
  }
}
