// A WebSocket as a call's message channel (the session's own socket, or a sideband connection):
// text messages both ways, with the unsent backlog bounded so a client that stops reading cannot
// grow the node's memory.
import type { WebSocket } from 'ws';
import type { MessageChannel } from '../transport.js';

/** `tooSlow` is told (once per message refused) when the backlog passes `maxUnsentBytes`. */
export function websocketChannel(socket: WebSocket, label: string, maxUnsentBytes: number, tooSlow: () => void): MessageChannel {
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
    onMessage: (cb) => socket.on('message', (data, isBinary) => cb(isBinary ? '' : data.toString())),
    onClose: (cb) => socket.on('close', cb),
    close: () => socket.close(),
  };
}
