// RTCP we send: sender reports (with a reception report about the caller's stream) and SDES CNAME,
// so browsers' statistics, RTT and congestion control see a well-behaved peer.
import {
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

export interface SenderCounters {
  ssrc: number;
  rtpTimestamp: number;
  packets: number;
  octets: number;
}

/** SR (when we have sent media) or RR, plus SDES CNAME, as one compound packet. */
export function buildReport(cname: string, sender: SenderCounters, report: RtcpReceiverInfo | undefined, sentMedia: boolean): Buffer {
  const reports = report ? [report] : [];
  const first = sentMedia
    ? new RtcpSrPacket({
        ssrc: sender.ssrc,
        senderInfo: new RtcpSenderInfo({
          ntpTimestamp: ntpNow(),
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
