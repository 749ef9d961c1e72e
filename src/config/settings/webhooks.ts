// Settings of one area. Webhooks. src/config/env.ts merges the areas into the one validated table.
import { parseEventTypes } from '../webhookEventTypes.js';
import { cidrList, dnsServers, int, type Setting, webhookSecret, webhookUrl } from '../parsers.js';

export const webhooksSettings = {
  WEBHOOK_URL: {
    doc: "Endpoint (http or https URL) that receives every API key's call events, signed per Standard Webhooks with WEBHOOK_SECRET. Set both or neither. Per-key endpoints are added with `parley webhooks add`.",
    parse: webhookUrl,
  },
  WEBHOOK_SECRET: { doc: 'Signing secret of WEBHOOK_URL: whsec_ followed by base64 of at least 24 random bytes (e.g. `echo whsec_$(openssl rand -base64 32)`). Never logged.', parse: webhookSecret },
  WEBHOOK_EVENTS: {
    doc: 'Comma-separated event types WEBHOOK_URL receives: call.started, call.ended, call.failed, call.turn (one per completed turn, with its transcript; opt-in), realtime.call.incoming (a SIP call rings and waits for the app\'s decision; opt-in).',
    default: 'call.started,call.ended,call.failed',
    parse: parseEventTypes,
  },
  WEBHOOK_ALLOWED_CIDRS: {
    doc: "Comma-separated addresses or CIDR ranges webhooks may be sent to although they are internal: loopback, private (RFC 1918, IPv6 ULA), link-local, cloud metadata, CGNAT, unspecified, multicast and reserved addresses are refused otherwise, when an endpoint is added (`parley webhooks add`, WEBHOOK_URL at start) and again on the address each delivery connects to. Parley's own HTTP and node-to-node listeners are refused whatever it says.",
    default: '',
    parse: cidrList,
  },
  WEBHOOK_DNS_SERVERS: {
    doc: "Comma-separated DNS servers (ip, ip:port, [ipv6]:port) that resolve webhook hosts, asked directly (A and AAAA queries). Empty: the system's resolver (/etc/hosts included).",
    default: '',
    parse: dnsServers,
  },
  WEBHOOK_TIMEOUT_MS: { doc: 'Time a webhook receiver has to answer an attempt; no answer in time is a failed attempt, retried.', default: '10000', parse: int(500, 60_000) },
  WEBHOOK_RETRY_MAX_MS: {
    doc: 'Cap of the delay between attempts of one delivery (exponential backoff with full jitter from 1 s up to this). Deliveries are retried for 24 hours after their event, then marked failed.',
    default: '3600000',
    parse: int(100, 86_400_000),
  },
  WEBHOOK_POLL_MS: { doc: "How often each node looks in the store for webhook deliveries due (another node's, or retries); its own events are sent at once.", default: '500', parse: int(50, 60_000) },
  WEBHOOK_CONCURRENCY: { doc: 'Webhook requests one node has in flight at once (one per endpoint at a time, so a slow receiver does not hold up the others).', default: '8', parse: int(1, 256) },
} satisfies Record<string, Setting<unknown>>;
