// Debian's Kamailio as the trunk-facing proxy in front of Parley, the way a carrier or an SBC sits
// there: a stateful proxy (tm) that record-routes every dialog, sends new requests for user `agent`
// to Parley and everything else to its Request-URI, and routes in-dialog requests by their Route
// headers (loose routing). Runs in the foreground on loopback UDP, its log on stderr. With
// `challenge`, it asks Parley's own INVITEs (outbound calls, from Parley's SIP port) for a trunk
// account's digest credentials (407), as a carrier's trunk does; with `numbersTo`, it delivers calls
// to numbers (+…) to that port on loopback (the "PSTN" a test's phone stands for).
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from './baresip.ts';
import { until } from './wait.ts';

export interface Kamailio {
  port: number;
  proc: ChildProcess;
  out: () => string;
  stop: () => Promise<void>;
}

export async function startKamailio(dir: string, parleySipPort: number, opts: { challenge?: { user: string; password: string }; numbersTo?: number } = {}): Promise<Kamailio> {
  const port = await freePort();
  const cfg = join(dir, 'kamailio.cfg');
  writeFileSync(
    cfg,
    `#!KAMAILIO
debug=2
log_stderror=yes
children=1
auto_aliases=no
listen=udp:127.0.0.1:${port}
alias="127.0.0.1:${port}"
mpath="/usr/lib/x86_64-linux-gnu/kamailio/modules/"
loadmodule "tm.so"
loadmodule "sl.so"
loadmodule "rr.so"
loadmodule "pv.so"
loadmodule "maxfwd.so"
loadmodule "siputils.so"
loadmodule "xlog.so"
loadmodule "textops.so"
loadmodule "auth.so"
modparam("rr", "enable_full_lr", 1)

request_route {
  if (!mf_process_maxfwd_header("10")) { sl_send_reply("483", "Too Many Hops"); exit; }
  if (has_totag()) {
    if (loose_route()) {
      if (is_method("BYE")) { xlog("L_INFO", "relaying in-dialog BYE\\n"); }
      t_relay();
      exit;
    }
    if (is_method("ACK") && t_check_trans()) { t_relay(); exit; }
    sl_send_reply("404", "Not Here");
    exit;
  }
  if (is_method("CANCEL")) { if (t_check_trans()) { t_relay(); } exit; }
${
    opts.challenge
      ? `  if (is_method("INVITE") && $sp == ${parleySipPort}) {
    if (!pv_proxy_authenticate("trunk", "${opts.challenge.password}", "0") || $au != "${opts.challenge.user}") {
      xlog("L_INFO", "challenged INVITE\\n");
      proxy_challenge("trunk", "0");
      exit;
    }
    consume_credentials();
  }
`
      : ''
  }  if (is_method("INVITE|SUBSCRIBE|REFER")) { record_route(); }
  if ($rU == "agent") { $du = "sip:127.0.0.1:${parleySipPort}"; }
${opts.numbersTo ? `  if ($rU =~ "^[+][0-9]+$") { $du = "sip:127.0.0.1:${opts.numbersTo}"; }\n` : ''}
  xlog("L_INFO", "relaying $rm $ru\\n");
  if (!t_relay()) { sl_reply_error(); }
}
`,
  );
  const proc = spawn('kamailio', ['-f', cfg, '-DD', '-E', '-Y', dir, '-P', join(dir, 'kamailio.pid'), '-w', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<void>((resolve) => proc.on('exit', () => resolve()));
  // Its UDP socket is bound once it has sized its receive buffer.
  await until('kamailio listening', () => out, (o) => /SO_RCVBUF is finally/.test(o) || proc.exitCode !== null, 30_000);
  if (proc.exitCode !== null) throw new Error(`kamailio exited:\n${out}`);
  return {
    port,
    proc,
    out: () => out,
    stop: async () => {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      await exited;
    },
  };
}
