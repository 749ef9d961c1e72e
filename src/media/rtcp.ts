// RTCP we send: sender reports (with a reception report about the caller's stream) and SDES CNAME,
// so browsers' statistics, RTT and congestion control see a well-behaved peer; and what we read
// of the caller's: its sender reports and its reception reports (about our stream: round trips).
import {
  RtcpPacketConverter,
  RtcpReceiverInfo,
  RtcpRrPacket,
  RtcpSenderInfo,
  RtcpSourceDescriptionPacket,
  RtcpSrPacket,
  SourceDescriptionChunk,
  SourceDescriptionItem,
} from 'werift-rtp';

const NTP_EPOCH_OFFSET = 2_208_988_800n;

/** Wall-clock time as a 64-bit NTP timestamp. */
export function ntpNow(nowMs = Date.now()): bigint {
  const ms = BigInt(Math.floor(nowMs));
  const seconds = ms / 1000n + NTP_EPOCH_OFFSET;
  const fraction = ((ms % 1000n) << 32n) / 1000n;
  return (seconds << 32n) | fraction;
}

/** The middle 32 bits of an NTP timestamp: how RTCP's LSR field names a sender report. */
export function ntpMiddle(ntp: bigint): number {
  return Number((ntp >> 16n) & 0xffffffffn);
}

export interface SenderCounters {
  ssrc: number;
  rtpTimestamp: number;
  packets: number;
  octets: number;
}

/**
 * A call's own report on its two streams (the same for every RTP wire): an SR once the agent has
 * sent audio (only an SR can be echoed back for a round trip), else an RR, about the caller's
 * stream. `senderReportNtp`: the SR's time, to match the caller's echo of it; undefined for an RR.
 */
export function callReport(sender: SenderCounters, receiver: { reportBlock(): RtcpReceiverInfo | undefined }): { packet: Buffer; senderReportNtp: bigint | undefined } {
  const ntp = ntpNow();
  const sentMedia = sender.packets > 0;
  return { packet: buildReport('parley', sender, receiver.reportBlock(), sentMedia, ntp), senderReportNtp: sentMedia ? ntp : undefined };
}

/** SR (when we have sent media) or RR, plus SDES CNAME, as one compound packet; `ntp` is the SR's time. */
export function buildReport(cname: string, sender: SenderCounters, report: RtcpReceiverInfo | undefined, sentMedia: boolean, ntp = ntpNow()): Buffer {
  const reports = report ? [report] : [];
  const first = sentMedia
    ? new RtcpSrPacket({
        ssrc: sender.ssrc,
        senderInfo: new RtcpSenderInfo({
          ntpTimestamp: ntp,
          rtpTimestamp: sender.rtpTimestamp >>> 0,
          packetCount: sender.packets >>> 0,
          octetCount: sender.octets >>> 0,
        }),
        reports,
      })
    : new RtcpRrPacket({ ssrc: sender.ssrc, reports });
  const sdes = new RtcpSourceDescriptionPacket({
    chunks: [new SourceDescriptionChunk({ source: sender.ssrc, items: [new SourceDescriptionItem({ type: 1, text: cname })] })],
  });
  return Buffer.concat([first.serialize(), sdes.serialize()]);
}

/** What an incoming compound RTCP packet says that we use. */
export interface IncomingRtcp {
  /** The NTP times of its sender reports. */
  senderReports: bigint[];
  /** Its reception report blocks (in SRs and RRs), about whichever streams. */
  receptionReports: RtcpReceiverInfo[];
}

/** Reads a compound RTCP packet; a malformed one reads as empty. */
export function readRtcp(packet: Buffer): IncomingRtcp {
  const read: IncomingRtcp = { senderReports: [], receptionReports: [] };
  try {
    for (const p of RtcpPacketConverter.deSerialize(packet)) {
      if (p instanceof RtcpSrPacket) {
        read.senderReports.push(p.senderInfo.ntpTimestamp);
        read.receptionReports.push(...p.reports);
      } else if (p instanceof RtcpRrPacket) {
        read.receptionReports.push(...p.reports);
      }
    }
  } catch {
    // malformed RTCP is ignored
  }
  return read;
}
