// Key presses sent as SIP INFO instead of RFC 4733 packets, as many PBXes and phones are set to:
// `application/dtmf-relay` (Cisco's `Signal=5` / `Duration=160` lines) and `application/dtmf` (the
// key alone). Events 10–15 stand for * # A B C D, as in RFC 4733.

export const DTMF_INFO_TYPES = ['application/dtmf-relay', 'application/dtmf'];

const DIGITS = '0123456789*#ABCD';

/** The key an INFO body of `contentType` carries; 'unsupported' for another type; undefined when none is readable. */
export function readDtmfInfo(contentType: string, body: string): string | undefined | 'unsupported' {
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  if (!DTMF_INFO_TYPES.includes(type)) return 'unsupported';
  const signal = type === 'application/dtmf-relay' ? /^\s*signal\s*=\s*(\S+)\s*$/im.exec(body)?.[1] : body.trim();
  return signal === undefined ? undefined : keyOf(signal);
}

function keyOf(signal: string): string | undefined {
  if (/^(?:[0-9]|1[0-5])$/.test(signal)) return DIGITS[Number(signal)];
  const key = signal.toUpperCase();
  return key.length === 1 && DIGITS.includes(key) ? key : undefined;
}
