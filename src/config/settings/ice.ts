// Settings of one area. Reaching WebRTC callers: STUN, TURN, ICE candidates and the WebRTC stack. src/config/env.ts merges the areas into the one validated table.
import { bool, cidrList, iceUrls, int, ip, oneOf, peerIps, portRange, secretList, serverIceUrls, type Setting, str } from '../parsers.js';

export const iceSettings = {
  STUN_URLS: {
    doc: "Comma-separated stun: URLs handed out by ice-config. Unset: the embedded STUN server's address and bound port (ICE_PUBLIC_IP when set), or, with STUN_ENABLED=false, the TURN servers that answer (coturn answers STUN too).",
    parse: iceUrls(['stun']),
  },
  STUN_ENABLED: { doc: 'Run the embedded STUN server (RFC 5389 Binding on UDP).', default: 'true', parse: bool },
  STUN_PORT: { doc: 'UDP port of the embedded STUN server (0 picks a free one).', default: '3478', parse: int(0, 65535) },
  STUN_BIND: { doc: 'Address the embedded STUN server binds (empty: HOST).', default: '', parse: ip },
  TURN_ENABLED: {
    doc: 'Hand out a TURN server in ice-config (by default the coturn Parley runs itself); false: none, and no coturn.',
    default: 'true',
    parse: bool,
  },
  TURN_URLS: {
    doc: "Comma-separated turn:/turns: URLs of external TURN servers (coturn in use-auth-secret mode with TURN_SECRETS) for ice-config's TURN entry. Unset: Parley runs coturn itself on TURN_PORT.",
    parse: iceUrls(['turn', 'turns']),
  },
  TURN_PORT: {
    doc: "UDP and TCP port of the coturn Parley runs when TURN_URLS is unset (0 picks a free one).",
    default: '3479',
    parse: int(0, 65535),
  },
  TURN_BIND: {
    doc: "Address Parley's coturn listens on (empty: HOST). On a loopback address it relays on loopback only (single-machine development).",
    default: '',
    parse: ip,
  },
  TURN_CHECK_INTERVAL_MS: {
    doc: 'How often every TURN server is checked with a real allocation; one that fails is left out of ice-config until it answers again (parley_turn_up). 0: no checks, every TURN URL is handed out.',
    default: '30000',
    parse: int(0, 3_600_000),
  },
  TURN_SECRETS: {
    doc: 'Comma-separated TURN REST-API shared secrets (coturn static-auth-secret); the first signs, all are accepted by coturn. Unset: one generated into <DATA_DIR>/secrets.json.',
    parse: secretList,
  },
  TURN_CREDENTIAL_TTL_SECONDS: { doc: 'Lifetime of TURN credentials (outlasts a call).', default: '3600', parse: int(60, 86400) },
  TURN_REALM: { doc: "coturn realm (Parley's coturn and `parley turn config`).", default: 'parley', parse: str },
  TURN_RELAY_PORT_RANGE: { doc: "coturn's UDP relay port range, MIN-MAX (Parley's coturn and `parley turn config`).", default: '49152-65535', parse: portRange },
  TURN_TLS_CERT: { doc: "coturn's TLS certificate (full chain) path when TURN_URLS has a turns: URL, for `parley turn config`.", default: '/etc/coturn/fullchain.pem', parse: str },
  TURN_TLS_KEY: { doc: "coturn's TLS private key path when TURN_URLS has a turns: URL, for `parley turn config`.", default: '/etc/coturn/privkey.pem', parse: str },
  TURN_ALLOW_LOOPBACK_PEERS: { doc: "Let coturn relay to loopback peers, for tests and single-machine development only (Parley's coturn and `parley turn config`; Parley's coturn on a loopback address always does).", default: 'false', parse: bool },
  TURN_USER_QUOTA: { doc: "Relays (allocations) one TURN credential may hold at once in coturn (its user-quota; Parley's coturn and `parley turn config`). A browser call uses one or two. 0: no limit.", default: '10', parse: int(0, 100000) },
  TURN_TOTAL_QUOTA: { doc: "Relays coturn holds at once in all (its total-quota; Parley's coturn and `parley turn config`). 0: no limit.", default: '2000', parse: int(0, 1000000) },
  TURN_MAX_BPS: { doc: "Bytes a second one relay may carry (coturn's max-bps; Parley's coturn and `parley turn config`): a voice call needs about 10 KB/s, with camera video up to 250 KB/s. 0: no limit.", default: '500000', parse: int(0, 1_000_000_000) },
  TURN_TCP_RELAY: { doc: "Let coturn relay to TCP peers (RFC 6062; Parley's coturn and `parley turn config`). WebRTC never needs it (clients may still reach coturn over TCP), so it is off.", default: 'false', parse: bool },
  TURN_ALLOWED_PEER_IPS: {
    doc: "Comma-separated IPs or ranges (a-b) coturn may relay to despite the denied private ranges, e.g. Parley's private media address (Parley's coturn and `parley turn config`).",
    default: '',
    parse: peerIps,
  },
  ICE_BIND_ADDRESS: { doc: "Local address the server's peer connections bind to (empty: all interfaces).", default: '', parse: ip },
  ICE_PORT_RANGE: { doc: 'UDP port range for media, MIN-MAX (empty: any).', default: '', parse: portRange },
  ICE_CANDIDATE_ALLOW: {
    doc: "Comma-separated addresses or CIDR ranges the server may send ICE checks to even where the built-in rules refuse them (see \"ICE candidate filter\").",
    default: '',
    parse: cidrList,
  },
  ICE_CANDIDATE_DENY: {
    doc: 'Comma-separated addresses or CIDR ranges the server never sends ICE checks to (a client candidate there is dropped); wins over ICE_CANDIDATE_ALLOW.',
    default: '',
    parse: cidrList,
  },
  ICE_PUBLIC_IP: {
    doc: "Public address advertised in place of the server's host candidates (1:1 NAT, like every media server's NAT setting).",
    default: '',
    parse: ip,
  },
  SERVER_ICE_SERVERS: {
    doc: "Comma-separated STUN/TURN servers for the server's own peer connections (when it sits behind NAT): stun:host:port, turn:user:pass@host:port?transport=udp; a turn: URL without user:pass gets TURN REST credentials from the first TURN secret. Empty: host candidates only (an unreachable server stalls gathering).",
    default: '',
    parse: serverIceUrls,
  },
  WEBRTC_STACK: {
    doc: "Server-side WebRTC stack: libdatachannel (native, node-datachannel) or werift (pure TypeScript). Both behave the same; see bench/README.md for how they compare.",
    default: 'libdatachannel',
    parse: oneOf('libdatachannel', 'werift'),
  },
} satisfies Record<string, Setting<unknown>>;
