// A WebSocket as a call's message channel (the session's own socket, or a sideband connection):
// text messages both ways, with the unsent backlog bounded so a client that stops reading cannot
// grow the node's memory, and what its messages cost a turn of the event loop bounded so a client
// sending fast cannot hold up the node's other calls (inboundWork.ts).
import type { WebSocket } from 'ws';
import type { MessageChannel } from '../transport.js';
import { InboundWork } from './inboundWork.js';

/**
 * `tooSlow` is told (once per message refused) when the backlog passes `maxUnsentBytes`; `inbound`
 * is where the messages wait their turn (the transport's own, when it adds work of its own to it).
 */
export function websocketChannel(socket: WebSocket, label: string, maxUnsentBytes: number, tooSlow: () => void, inbound = new InboundWork(socket)): MessageChannel {
  socket.on('close', () => inbound.close());
  return {
    label,
    send: (text) => {
      if (socket.readyState !== socket.OPEN) return false;
      if (socket.bufferedAmount > maxUnsentBytes) {
        tooSlow();
        return false;
      }
      socket.send(text);
      return true;
    },
    // A binary frame carries no event: handed on as text that is not JSON, so it gets an error event.
    onMessage: (cb) =>
      // `data` is a Buffer: ws's default binaryType.
      socket.on('message', (data, isBinary) => inbound.add((data as Buffer).length, () => cb(isBinary ? '' : data.toString()))),
    onClose: (cb) => socket.on('close', cb),
    // A code the relay of a sideband (src/http/websocketRelay.ts) passes on as it is.
    close: () => socket.close(1000),
  };
}
