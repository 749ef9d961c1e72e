// Debian's SIPp (`sip-tester`) as the caller: a scenario that places a call, streams G.711 μ-law
// speech for a while with SIPp's own RTP streamer (`rtp_stream`), and hangs up; run for many calls at
// a rate over UDP or TCP, with SIPp's statistics read back (its CSV: calls that succeeded, failed).
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import alawmulaw from 'alawmulaw';
import { freePort } from './baresip.ts';
import { speak } from './speech.ts';

/** The caller's scenario: INVITE with a PCMU offer, ACK, `seconds` of speech (rtp_stream), BYE. */
function scenario(seconds: number): string {
  const common = `Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
[last_From:]
[last_To:]
[last_Call-ID:]
[routes]
Max-Forwards: 70`;
  return `<?xml version="1.0" encoding="ISO-8859-1" ?>
<!DOCTYPE scenario SYSTEM "sipp.dtd">
<scenario name="parley speech caller">
  <send retrans="500" start_rtd="answer">
    <![CDATA[
INVITE sip:agent@[remote_ip]:[remote_port] SIP/2.0
Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
From: <sip:sipp@[local_ip]:[local_port]>;tag=[pid]SIPpTag[call_number]
To: <sip:agent@[remote_ip]:[remote_port]>
Call-ID: [call_id]
CSeq: 1 INVITE
Contact: <sip:sipp@[local_ip]:[local_port];transport=[transport]>
Max-Forwards: 70
Content-Type: application/sdp
Content-Length: [len]

v=0
o=sipp [pid][call_number] 1 IN IP[local_ip_type] [local_ip]
s=-
c=IN IP[media_ip_type] [media_ip]
t=0 0
m=audio [rtpstream_audio_port] RTP/AVP 0
a=rtpmap:0 PCMU/8000
a=sendrecv

    ]]>
  </send>
  <recv response="100" optional="true"/>
  <recv response="180" optional="true"/>
  <recv response="200" rtd="answer" rrs="true"/>
  <send>
    <![CDATA[
ACK [next_url] SIP/2.0
${common}
CSeq: 1 ACK
Content-Length: 0

    ]]>
  </send>
  <nop><action><exec rtp_stream="speech.ulaw,1,0"/></action></nop>
  <pause milliseconds="${seconds * 1000}"/>
  <send retrans="500">
    <![CDATA[
BYE [next_url] SIP/2.0
${common}
CSeq: 2 BYE
Content-Length: 0

    ]]>
  </send>
  <recv response="200" crlf="true"/>
</scenario>
`;
}

/** `seconds` of speech as 8 kHz μ-law (sentences spoken in turn, the last cut at the end). */
function speechUlaw(seconds: number): Buffer {
  const samples = new Int16Array(8000 * seconds);
  const sentences = ['what time is it', 'I would like to book a table for two people at seven thirty tonight.', 'One, two, three, four, five.'];
  for (let at = 0, i = 0; at < samples.length; i++) {
    const spoken = speak(sentences[i % sentences.length]!, 8000);
    samples.set(spoken.subarray(0, samples.length - at), at);
    at += spoken.length + 2400; // 0.3 s between sentences
  }
  return Buffer.from(alawmulaw.mulaw.encode(samples));
}

export interface SippRun {
  /** SIPp's exit status: 0 when every call succeeded. */
  exitCode: number | null;
  successful: number;
  failed: number;
  /** SIPp's error log, when it wrote one. */
  errors: string;
}

/**
 * Runs SIPp against `target` (host:port): `calls` calls at `rate` per second over `transport`, each
 * streaming `seconds` of speech. Resolves when SIPp exits (or after `timeoutMs`, killed).
 */
export async function runSipp(opts: { target: string; transport: 'udp' | 'tcp'; calls: number; rate: number; seconds: number; timeoutMs?: number }): Promise<SippRun> {
  const dir = mkdtempSync(join(tmpdir(), 'parley-sipp-'));
  try {
    writeFileSync(join(dir, 'caller.xml'), scenario(opts.seconds));
    writeFileSync(join(dir, 'speech.ulaw'), speechUlaw(opts.seconds));
    const args = [
      '-sf', 'caller.xml',
      '-t', opts.transport === 'udp' ? 'u1' : 't1',
      '-m', String(opts.calls),
      '-r', String(opts.rate),
      '-i', '127.0.0.1',
      '-p', String(await freePort()),
      '-mp', String(await freePort()),
      '-nostdin',
      '-trace_stat', '-stf', 'stats.csv',
      '-trace_err',
      opts.target,
    ];
    const child = spawn('sipp', args, { cwd: dir, stdio: 'ignore' });
    const exitCode = await new Promise<number | null>((resolve) => {
      const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? (opts.calls / opts.rate + opts.seconds) * 1000 + 60_000);
      child.once('exit', (code) => {
        clearTimeout(timer);
        resolve(code);
      });
    });
    const rows = readFileSync(join(dir, 'stats.csv'), 'latin1').trim().split('\n').map((line) => line.split(';'));
    const head = rows[0]!;
    const last = rows.at(-1)!;
    const column = (name: string) => Number(last[head.indexOf(name)]);
    const errorLog = readdirSync(dir).find((f) => f.endsWith('_errors.log'));
    return { exitCode, successful: column('SuccessfulCall(C)'), failed: column('FailedCall(C)'), errors: errorLog ? readFileSync(join(dir, errorLog), 'latin1') : '' };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
