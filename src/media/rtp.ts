// RTP packets (RFC 3550 §5.1) read and written directly on Buffers. Every call moves 50 packets a
// second each way; werift-rtp's object model (header objects, parsed extensions, a copied payload)
// cost more per packet than everything else in the path but the codec, and we need none of it.

export interface RtpFields {
  payloadType: number;
  sequenceNumber: number;
  timestamp: number;
  ssrc: number;
  marker: boolean;
}

export interface RtpView extends RtpFields {
  /** The payload, a view into the packet (no copy), padding removed. */
  payload: Buffer;
}

const FIXED_HEADER_BYTES = 12;

/**
 * Reads an RTP packet's header fields and payload; undefined when it is not a well-formed RTP
 * packet (version 2, CSRC list, header extension and padding within the packet).
 */
export function readRtp(packet: Buffer): RtpView | undefined {
  if (packet.length < FIXED_HEADER_BYTES) return undefined;
  const b0 = packet[0]!;
  if (b0 >> 6 !== 2) return undefined;
  let start = FIXED_HEADER_BYTES + 4 * (b0 & 0x0f);
  if (b0 & 0x10) {
    // Header extension: 16-bit profile, 16-bit length in 32-bit words, then the words.
    if (packet.length < start + 4) return undefined;
    start += 4 + 4 * packet.readUInt16BE(start + 2);
  }
  let end = packet.length;
  if (b0 & 0x20) end -= packet[end - 1]!;
  if (start > end) return undefined;
  const b1 = packet[1]!;
  return {
    payloadType: b1 & 0x7f,
    marker: (b1 & 0x80) !== 0,
    sequenceNumber: packet.readUInt16BE(2),
    timestamp: packet.readUInt32BE(4),
    ssrc: packet.readUInt32BE(8),
    payload: packet.subarray(start, end),
  };
}

/** One RTP packet: a 12-byte header (no CSRC, extension or padding) followed by the payload. */
export function writeRtp(fields: RtpFields, payload: Uint8Array): Buffer {
  const packet = Buffer.allocUnsafe(FIXED_HEADER_BYTES + payload.length);
  packet[0] = 0x80;
  packet[1] = (fields.marker ? 0x80 : 0) | (fields.payloadType & 0x7f);
  packet.writeUInt16BE(fields.sequenceNumber & 0xffff, 2);
  packet.writeUInt32BE(fields.timestamp >>> 0, 4);
  packet.writeUInt32BE(fields.ssrc >>> 0, 8);
  packet.set(payload, FIXED_HEADER_BYTES);
  return packet;
}
