// SRTP and SRTCP (RFC 3711) with AES_CM_128_HMAC_SHA1_80 for media keyed outside DTLS (SDES, RFC
// 4568, as SIP trunks key it): werift's SRTP contexts do the cipher and the authentication; this
// wraps them for whole packets, and a packet that does not authenticate is dropped, never thrown.
import { RtpPacket, SrtcpSession, SrtpSession, ProtectionProfileAes128CmHmacSha1_80 } from 'werift-rtp';

/** AES_CM_128's master key and salt lengths (RFC 3711 §8.2). */
export const SRTP_KEY_BYTES = 16;
export const SRTP_SALT_BYTES = 14;

export interface SrtpKeys {
  /** Ours (what we send is protected with), and the caller's. */
  local: { key: Buffer; salt: Buffer };
  remote: { key: Buffer; salt: Buffer };
}

export class SrtpChannel {
  private readonly rtp: SrtpSession;
  private readonly rtcp: SrtcpSession;

  constructor({ local, remote }: SrtpKeys) {
    const config = {
      keys: { localMasterKey: local.key, localMasterSalt: local.salt, remoteMasterKey: remote.key, remoteMasterSalt: remote.salt },
      profile: ProtectionProfileAes128CmHmacSha1_80,
    };
    this.rtp = new SrtpSession(config);
    this.rtcp = new SrtcpSession(config);
  }

  protectRtp(packet: Buffer): Buffer {
    const { header, payload } = RtpPacket.deSerialize(packet);
    return this.rtp.encrypt(payload, header);
  }

  /** The plain packet, or undefined when it does not authenticate (forged, or keyed otherwise). */
  unprotectRtp(packet: Buffer): Buffer | undefined {
    try {
      return this.rtp.decrypt(packet);
    } catch {
      return undefined;
    }
  }

  protectRtcp(packet: Buffer): Buffer {
    return this.rtcp.encrypt(packet);
  }

  unprotectRtcp(packet: Buffer): Buffer | undefined {
    try {
      return this.rtcp.decrypt(packet);
    } catch {
      return undefined;
    }
  }
}
