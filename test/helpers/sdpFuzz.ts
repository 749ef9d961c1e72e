// Random mutations of an SDP offer, reproducible from a seed: the offer fuzz test and the probe
// battery (bench/probes.ts) use them.

/** A small deterministic generator, so a failure can be replayed. */
export function rng(seed: number): () => number {
  return () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
}

export const SDP_JUNK = ['a=mid:', 'm=audio 0 RTP/AVP', 'a=rtpmap:111 opus/48000/2', 'a=fingerprint:sha-256 00', 'a=group:BUNDLE 9 9 9', 'm=text 9 UDP/TLS/RTP/SAVPF 98', 'a=setup:passive', 'a=candidate:x', '\u0000\u00ff', 'a=ssrc:-1 cname:x', 'a=extmap:300 urn:x', 'c=IN IP6 ::1', 'a=sctp-port:0'];

/** The offer's lines with 1-4 random edits: a line dropped, repeated, cut short, junk inserted, a number changed. */
export function mutateSdp(lines: string[], random: () => number, junk: string[] = SDP_JUNK): string {
  const mutated = [...lines];
  const edits = 1 + Math.floor(random() * 4);
  for (let e = 0; e < edits; e++) {
    const at = Math.floor(random() * mutated.length);
    const kind = Math.floor(random() * 5);
    if (kind === 0) mutated.splice(at, 1);
    else if (kind === 1) mutated.splice(at, 0, mutated[Math.floor(random() * mutated.length)]!);
    else if (kind === 2) mutated[at] = (mutated[at] ?? '').slice(0, Math.floor(random() * 20));
    else if (kind === 3) mutated.splice(at, 0, junk[Math.floor(random() * junk.length)]!);
    else mutated[at] = (mutated[at] ?? '').replace(/\d+/, String(Math.floor(random() * 1e6)));
  }
  return mutated.join('\r\n');
}
