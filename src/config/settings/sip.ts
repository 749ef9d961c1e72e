// Settings of one area. SIP: the listeners, digest users, registrations, outbound calls and routing. src/config/env.ts merges the areas into the one validated table.
import { cidrList, int, ip, oneOf, type Setting, sipOutboundAllow, sipRegistrations, sipTrunk, sipUsers } from '../parsers.js';

export const sipSettings = {
  RATE_LIMIT_SIP_INVITES_PER_IP: {
    doc: 'SIP INVITEs one source address outside SIP_TRUSTED_CIDRS may send per window (challenged, refused and wrong-password ones included; retransmissions not); beyond it 503 with Retry-After. 0: no limit. A trunk in SIP_TRUSTED_CIDRS is held by the call limits only. Counted per node (under PARLEY_WORKERS by the primary), or across nodes with Redis.',
    default: '120',
    parse: int(0, 10_000_000),
  },
  RATE_LIMIT_SIP_REGISTERS_PER_IP: {
    doc: 'SIP REGISTERs one source address outside SIP_TRUSTED_CIDRS may send per window (challenged and refused ones included; retransmissions not); beyond it 503 with Retry-After. A phone sends two or three per registration and refresh. 0: no limit. Counted per node (under PARLEY_WORKERS by the primary), or across nodes with Redis.',
    default: '120',
    parse: int(0, 10_000_000),
  },
  SIP_PORT: {
    doc: 'Port of the SIP front door (phone calls from a SIP trunk or PBX), UDP and TCP; 0 picks a free one. Unset: no SIP.',
    default: '',
    parse: (raw: string) => (raw.trim() === '' ? undefined : int(0, 65535)(raw)),
  },
  SIP_TLS_PORT: {
    doc: 'Port of SIP over TLS (sips, RFC 3261 §26.2) when TLS_CERT_FILE and TLS_KEY_FILE are set and SIP_PORT is; 0 picks a free one. Empty: SIP_PORT + 1 (5061 beside 5060), or a free one when SIP_PORT is 0.',
    default: '',
    parse: (raw: string) => (raw.trim() === '' ? undefined : int(0, 65535)(raw)),
  },
  SIP_HOST: {
    doc: "Address the SIP front door and its RTP media bind, and the address its SDP answers announce (ICE_PUBLIC_IP instead when set). Empty: HOST.",
    default: '',
    parse: ip,
  },
  SIP_USERS: {
    doc: 'Comma-separated user:password pairs SIP callers authenticate as (digest, MD5). Callers from SIP_TRUSTED_CIDRS need none; with neither set only loopback callers are admitted.',
    default: '',
    parse: sipUsers,
  },
  SIP_REGISTRATIONS: {
    doc: "Comma-separated accounts Parley registers with at upstream SIP providers or PBXes, each sip:user:password@registrar[:port][;expires=seconds] (UDP; port 5060, expires 600 by default; percent-encode : @ , ; in the password). The provider then sends that account's calls to this node's SIP port: put its addresses in SIP_TRUSTED_CIDRS. Refreshed before expiry, retried with backoff after a failure; state in /readyz (sip_registrations) and parley_sip_registration_up.",
    default: '',
    parse: sipRegistrations,
  },
  SIP_MAX_HALF_OPEN_CALLS: {
    doc: "SIP calls connecting (ringing, or answered and not yet ACKed) this node (each worker) holds at once; beyond it an INVITE gets 503 with Retry-After. A budget of SIP's own: these calls count neither against their key's MAX_HALF_OPEN_CALLS_PER_KEY nor the node's MAX_HALF_OPEN_CALLS, so unacknowledged INVITEs cannot lock the key out of its WebRTC and WebSocket calls (they still count in MAX_CALLS_PER_KEY and MAX_CONCURRENT_CALLS).",
    default: '10',
    parse: int(1, 10000),
  },
  SIP_TCP_MAX_CONNECTIONS_PER_IP: {
    doc: 'SIP TCP and TLS connections one source address may hold at once (within the node\'s 1,024); a further one is closed as it opens. Addresses in SIP_TRUSTED_CIDRS are held by the node\'s cap only. 0: no per-address limit.',
    default: '32',
    parse: int(0, 1024),
  },
  SIP_TCP_IDLE_TIMEOUT_MS: {
    doc: 'A SIP TCP or TLS connection that brings no complete SIP message for this long (keep-alives and bytes trickling in do not count) is closed, unless it carries a call.',
    default: '30000',
    parse: int(1000, 3_600_000),
  },
  SIP_MEDIA_TIMEOUT_MS: {
    doc: 'A SIP call whose caller sends neither RTP nor RTCP for this long (it vanished without BYE: a phone unplugged, a NAT binding gone) ends (end_reason media_timeout) and is sent a BYE. Not counted while the caller holds the call (recvonly, inactive). 0: never (the call idle timeout still applies).',
    default: '30000',
    parse: int(0, 3_600_000),
  },
  SIP_AUTH_MAX_FAILURES: {
    doc: 'Wrong SIP digest passwords in a row one source address may send (for any user, or for names that are no user\'s); then its INVITEs and REGISTERs with credentials get 403 Forbidden for 30 s, the wait doubling with each further wrong password (up to 30 minutes). The address that guesses waits, not the account: a phone elsewhere still logs in. The right password after the wait starts the count over. Counted per node (under PARLEY_WORKERS by the primary). 0: no backoff.',
    default: '5',
    parse: int(0, 1000),
  },
  SIP_TRUSTED_CIDRS: {
    doc: 'Comma-separated addresses or CIDR ranges (a trunk\'s signalling addresses) whose SIP calls are admitted without authentication; other sources must authenticate (SIP_USERS) or are refused (403).',
    default: '',
    parse: cidrList,
  },
  SIP_API_KEY_ID: {
    doc: 'Id of the API key (key_…) that owns SIP calls: their records, limits and the sideband connection. Empty: the oldest active key.',
    default: '',
    parse: (raw: string) => {
      if (raw !== '' && !/^key_[A-Za-z0-9]+$/.test(raw)) throw new Error('must be an API key id (key_…), as `parley keys list` shows');
      return raw;
    },
  },
  SIP_OUTBOUND_TRUNK: {
    doc: 'The SIP trunk or proxy outbound calls (POST /v1/realtime/sip/calls) go through: sip:[user:password@]host[:port] (UDP, port 5060 by default; the credentials answer its digest challenge, for numbers and SIP URIs of this host and port only; percent-encode : @ , ; in the password). A number is called as sip:NUMBER@host; a SIP URI is sent through it with its own Request-URI. Empty: numbers cannot be called, SIP URIs are called directly. Registered phones are always called directly.',
    default: '',
    parse: sipTrunk,
  },
  SIP_OUTBOUND_CALLER_ID: {
    doc: "The caller id (the From user) of outbound SIP calls that name none: a number (+…) or a user name.",
    default: 'parley',
    parse: (raw: string) => {
      if (!/^\+?[A-Za-z0-9._~-]{1,64}$/.test(raw)) throw new Error('must be a number (+…) or a user name of letters, digits and . _ ~ -');
      return raw;
    },
  },
  SIP_OUTBOUND_ALLOW: {
    doc: "Which destinations each API key may call out to (toll-fraud guard), as semicolon-separated key_…=PATTERN[,PATTERN…] entries, `*=…` for every key; a pattern is a glob (* any characters) whose start says what it allows: + (or tel:+) numbers (+4930*), a digit numbers without + and registered users named so (0049*, 1001), sip: SIP URIs (sip:*@pbx.example.com), anything else registered users' names (alice; * alone: every registered phone, no number). A number is matched as dialled however it is written: a SIP URI whose user part has no letter (sip:+4930…@pbx) must match a number pattern too. Empty: no key may call out (403).",
    default: '',
    parse: sipOutboundAllow,
  },
  SIP_OUTBOUND_MAX_CALLS: {
    doc: 'Outbound SIP calls (ringing or answered) this node (each worker) carries at once; beyond it a request gets 429.',
    default: '20',
    parse: int(1, 10_000),
  },
  SIP_OUTBOUND_MAX_CALLS_PER_KEY: {
    doc: 'Outbound SIP calls (ringing or answered) one API key has on this node (each worker) at once; beyond it a request gets 429. They count in MAX_CALLS_PER_KEY too.',
    default: '5',
    parse: int(1, 10_000),
  },
  RATE_LIMIT_SIP_OUTBOUND_PER_KEY: {
    doc: 'Outbound SIP call attempts one API key may make per RATE_LIMIT_WINDOW_SECONDS (refused ones included), counted across nodes with Redis, else per node (under PARLEY_WORKERS by the primary); beyond it 429 with Retry-After. 0: no limit.',
    default: '30',
    parse: int(0, 1_000_000),
  },
  SIP_ROUTING_TIMEOUT_MS: {
    doc: 'How long a SIP call rings waiting for the app\'s accept, reject or refer after its realtime.call.incoming webhook; then SIP_DEFAULT_ROUTE applies. A SIP call\'s connect deadline is this plus 32 s (64·T1) for the ACK of its 200, not CALL_CONNECT_TIMEOUT_MS.',
    default: '5000',
    parse: int(500, 25_000),
  },
  SIP_DEFAULT_ROUTE: {
    doc: 'What a ringing SIP call nobody decided on within SIP_ROUTING_TIMEOUT_MS gets: answer (the default agent answers) or reject (480 Temporarily Unavailable).',
    default: 'answer',
    parse: oneOf('answer', 'reject'),
  },
} satisfies Record<string, Setting<unknown>>;
