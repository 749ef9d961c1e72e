// Ogg Opus (RFC 7845 over RFC 3533) for a recording: the two header pages (OpusHead, OpusTags),
// then audio pages of whole 20 ms packets, each page stamped with the granule position (48 kHz
// samples, pre-skip included) of the last packet it completes. A page is built at once, never
// edited afterwards, so a file can be appended to while its call runs.

/** A flag of the page header's type byte (RFC 3533 §6): the stream's first page, its last page. */
const BEGINNING_OF_STREAM = 0x02;
const END_OF_STREAM = 0x04;
/** A page holds at most 255 lacing values. */
const MAX_SEGMENTS = 255;

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let r = i << 24;
    for (let k = 0; k < 8; k++) r = r & 0x80000000 ? (r << 1) ^ 0x04c11db7 : r << 1;
    table[i] = r >>> 0;
  }
  return table;
})();

/** Ogg's CRC-32: polynomial 0x04c11db7, not reflected, initial value 0, no final XOR. */
export function oggCrc32(bytes: Uint8Array): number {
  let crc = 0;
  for (let i = 0; i < bytes.length; i++) crc = ((crc << 8) ^ CRC_TABLE[((crc >>> 24) ^ bytes[i]!) & 0xff]!) >>> 0;
  return crc;
}

/** The lacing values of one packet: 255 per full segment, then the remainder (0 when it divides). */
function lacing(length: number): number[] {
  const values = new Array<number>(Math.floor(length / 255)).fill(255);
  values.push(length % 255);
  return values;
}

export interface OggPage {
  /** The packets that end on this page (never split across pages here). */
  packets: Uint8Array[];
  granulePosition: bigint;
  serial: number;
  sequence: number;
  first?: boolean;
  last?: boolean;
}

/** One page's bytes, CRC included. Its packets must fit 255 lacing values. */
export function oggPage(page: OggPage): Buffer {
  const segments = page.packets.flatMap((p) => lacing(p.length));
  if (segments.length > MAX_SEGMENTS) throw new RangeError(`an Ogg page holds at most ${MAX_SEGMENTS} segments, not ${segments.length}`);
  const bodyLength = page.packets.reduce((n, p) => n + p.length, 0);
  const out = Buffer.alloc(27 + segments.length + bodyLength);
  out.write('OggS', 0, 'latin1');
  out[4] = 0; // version
  out[5] = (page.first ? BEGINNING_OF_STREAM : 0) | (page.last ? END_OF_STREAM : 0);
  out.writeBigInt64LE(page.granulePosition, 6);
  out.writeUInt32LE(page.serial >>> 0, 14);
  out.writeUInt32LE(page.sequence >>> 0, 18);
  // CRC (22..25) stays 0 while it is computed.
  out[26] = segments.length;
  out.set(segments, 27);
  let at = 27 + segments.length;
  for (const p of page.packets) {
    out.set(p, at);
    at += p.length;
  }
  out.writeUInt32LE(oggCrc32(out), 22);
  return out;
}

/** The identification header (RFC 7845 §5.1): version 1, channel mapping family 0 (mono or stereo). */
export function opusHead(channels: 1 | 2, preSkip: number, inputSampleRate = 48_000): Buffer {
  const head = Buffer.alloc(19);
  head.write('OpusHead', 0, 'latin1');
  head[8] = 1;
  head[9] = channels;
  head.writeUInt16LE(preSkip, 10);
  head.writeUInt32LE(inputSampleRate, 12);
  head.writeInt16LE(0, 16); // output gain
  head[18] = 0; // mapping family 0: left, right
  return head;
}

/** The comment header (RFC 7845 §5.2): the vendor string and `KEY=value` comments. */
export function opusTags(vendor: string, comments: string[] = []): Buffer {
  const parts = [Buffer.from('OpusTags', 'latin1'), lengthPrefixed(vendor), u32(comments.length), ...comments.map(lengthPrefixed)];
  return Buffer.concat(parts);
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
}

function lengthPrefixed(text: string): Buffer {
  const bytes = Buffer.from(text, 'utf8');
  return Buffer.concat([u32(bytes.length), bytes]);
}

/**
 * A logical Ogg Opus stream as pages: the headers first, then packets gathered into pages of up
 * to `packetsPerPage` (50 × 20 ms: a page a second), and a last page with the end-of-stream flag.
 */
export class OggOpusStream {
  private readonly serial = (Math.random() * 0x100000000) >>> 0;
  private sequence = 0;
  private granule = 0n;
  private pending: Uint8Array[] = [];
  private pendingSegments = 0;

  constructor(
    private readonly samplesPerPacket: number,
    private readonly packetsPerPage = 50,
  ) {}

  /** The two header pages; the first page of the stream is OpusHead alone (RFC 7845 §3). */
  headers(channels: 1 | 2, preSkip: number, vendor: string, comments: string[] = []): Buffer[] {
    return [
      oggPage({ packets: [opusHead(channels, preSkip)], granulePosition: 0n, serial: this.serial, sequence: this.sequence++, first: true }),
      oggPage({ packets: [opusTags(vendor, comments)], granulePosition: 0n, serial: this.serial, sequence: this.sequence++ }),
    ];
  }

  /**
   * Adds a packet; returns the previous page once it is full. The newest packets are held until the
   * next one comes, so the end-of-stream page always carries audio.
   */
  packet(packet: Uint8Array): Buffer | undefined {
    const segments = lacing(packet.length).length;
    const full = this.pending.length >= this.packetsPerPage || this.pendingSegments + segments > MAX_SEGMENTS;
    const page = this.pending.length && full ? this.page(false) : undefined;
    this.pending.push(packet);
    this.pendingSegments += segments;
    this.granule += BigInt(this.samplesPerPacket);
    return page;
  }

  /** The bytes the page of the packets held would take (its header included). */
  get pendingBytes(): number {
    return 27 + this.pendingSegments + this.pending.reduce((n, p) => n + p.length, 0);
  }

  /** The bytes `packet` may add to the stream at most (a page of its own). */
  static bytesAtMost(packet: Uint8Array): number {
    return 27 + lacing(packet.length).length + packet.length;
  }

  /** The last page, flagged end-of-stream. */
  end(): Buffer {
    return this.page(true);
  }

  /** The pending packets as a page, stamped with the granule of the last of them. */
  private page(last: boolean): Buffer {
    const page = oggPage({ packets: this.pending, granulePosition: this.granule, serial: this.serial, sequence: this.sequence++, last });
    this.pending = [];
    this.pendingSegments = 0;
    return page;
  }
}
