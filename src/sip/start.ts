// The SIP front door as a node starts it (SIP_PORT set), beside the HTTP one: the listener with its
// INVITE and REGISTER limits, digest users (and the backoff of addresses that guess) and trusted
// ranges, its stream connection limits, owning its calls for one API key. Under PARLEY_WORKERS the
// primary holds the sockets and relays each worker its share of the messages (clusterRelay.ts), and
// keeps the node's counts (clusterCounters.ts); every worker runs the rest.
import type { FastifyBaseLogger } from 'fastify';
import { openAiDefaultSession } from '../calls/protocol/openaiSession.js';
import type { Config } from '../config/env.js';
import type { ApiKeyStore } from '../auth/apiKeys.js';
import type { CallManager } from '../calls/callManager.js';
import type { Placement } from '../calls/placement.js';
import type { Metrics } from '../observability/metrics.js';
import type { ReadinessChecks } from '../observability/readiness.js';
import type { SessionDefaults } from '../session/session.js';
import type { SipBindingStore } from '../storage/sipBindings.js';
import { openRateLimitStore } from '../storage/openRateLimitStore.js';
import { blockList, contains } from '../system/cidr.js';
import { StartupError, bindFailure } from '../system/startupError.js';
import { AuthBackoff } from './authBackoff.js';
import { DigestAuth } from './digest.js';
import { RelayedCounters } from './clusterCounters.js';
import { RelayedListener, relayedPorts } from './clusterRelay.js';
import { SipBindError, SipSockets, type ListenerEvents, type SipSocketOptions } from './listener.js';
import { hostPort } from './responses.js';
import { SipServer } from './sipServer.js';
import type { RegistrationState } from './options.js';
import type { SipDialerSlot } from './dialer.js';
import type { SipRouting } from './routing.js';
import type { Health } from '../observability/readiness.js';

export interface SipDoor {
  close(): Promise<void>;
}

/** The node's parts the SIP door is handed (src/services.ts's Services has them all). */
export interface SipDoorServices {
  calls: CallManager;
  placement: Placement;
  apiKeys: Pick<ApiKeyStore, 'list'>;
  sipBindings: SipBindingStore;
  sessionDefaults: SessionDefaults;
  /** Ringing calls waiting for the app's decision, which the HTTP door delivers. */
  sipRouting: SipRouting;
  /** Where this door puts its dialer for the HTTP door's outbound calls. */
  sipDialer: SipDialerSlot;
  metrics: Metrics;
  readiness: ReadinessChecks;
  /** Records where this door listens, for the other nodes' redirects. */
  announceSip(address: string): Promise<void>;
}

/** The SIP front door (SIP_PORT set): its calls are owned by SIP_API_KEY_ID, else the oldest active key. */
export async function startSipDoor(config: Config, services: SipDoorServices, log: FastifyBaseLogger): Promise<SipDoor> {
  const host = config.SIP_HOST || config.HOST;
  const wildcard = host === '0.0.0.0' || host === '::';
  // Our SDP must name an address the caller's RTP can reach: a wildcard names none.
  if (wildcard && !config.ICE_PUBLIC_IP) throw new StartupError(`SIP binds ${host}: set SIP_HOST to an address callers reach, or ICE_PUBLIC_IP, for the SDP answers to announce`);
  /** The SIP address this node announces (host:port, UDP), once its listener is open. */
  let ownAddress: string | undefined;
  const trusted = trustedOf(config);
  const relayed = relayedPorts();
  // A worker's counts are its node's, kept by the primary (clusterCounters.ts).
  const counters = relayed ? new RelayedCounters(config.SIP_AUTH_MAX_FAILURES) : undefined;
  // The rates are counted in Redis when there is one (across nodes, as the HTTP limits); else by
  // this node (the process, or the workers' primary).
  const rated = config.RATE_LIMIT_SIP_INVITES_PER_IP || config.RATE_LIMIT_SIP_REGISTERS_PER_IP || config.RATE_LIMIT_SIP_OUTBOUND_PER_KEY;
  const limits = rated ? (counters && !config.REDIS_URL ? counters : await openRateLimitStore(config, log)) : undefined;
  const perAddress = (scope: 'sip-invite-ip' | 'sip-register-ip', limit: number) =>
    limits && limit
      ? async (address: string) => {
          const decision = await limits.hit(scope, address, limit, config.RATE_LIMIT_WINDOW_SECONDS * 1000);
          if (!decision.allowed) services.metrics.rateLimited.inc({ limit: scope });
          return decision;
        }
      : undefined;
  const refusedConnection = () => services.metrics.rateLimited.inc({ limit: 'sip-tcp-ip' });
  const listen = (events: ListenerEvents) =>
    relayed ? Promise.resolve(new RelayedListener(relayed, { ...events, refusedConnection })) : SipSockets.open({ ...sipSocketOptions(config, log), ...events, refusedConnection });
  const started = SipServer.start({
    inviteLimit: perAddress('sip-invite-ip', config.RATE_LIMIT_SIP_INVITES_PER_IP),
    outbound: {
      trunk: config.SIP_OUTBOUND_TRUNK,
      callerId: config.SIP_OUTBOUND_CALLER_ID,
      allow: config.SIP_OUTBOUND_ALLOW,
      maxCalls: config.SIP_OUTBOUND_MAX_CALLS,
      maxCallsPerKey: config.SIP_OUTBOUND_MAX_CALLS_PER_KEY,
      attemptLimit: limits && config.RATE_LIMIT_SIP_OUTBOUND_PER_KEY ? async (apiKeyId) => {
        const decision = await limits.hit('sip-outbound-key', apiKeyId, config.RATE_LIMIT_SIP_OUTBOUND_PER_KEY, config.RATE_LIMIT_WINDOW_SECONDS * 1000);
        if (!decision.allowed) services.metrics.rateLimited.inc({ limit: 'sip-outbound-key' });
        return decision;
      } : undefined,
      counted: (outcome) => services.metrics.sipOutboundCalls.inc({ outcome }),
    },
    host,
    announcedAddress: config.ICE_PUBLIC_IP || host,
    media: { inactivityTimeoutMs: config.SIP_MEDIA_TIMEOUT_MS },
    registrar: { bindings: services.sipBindings, limit: perAddress('sip-register-ip', config.RATE_LIMIT_SIP_REGISTERS_PER_IP) },
    registrations: {
      accounts: config.SIP_REGISTRATIONS,
      changed: (state) => {
        const labels = { registrar: state.registrar, user: state.user };
        services.metrics.sipRegistrationUp.set(labels, state.state === 'registered' ? 1 : 0);
        if (state.state === 'failed') {
          services.metrics.sipRegistrationFailures.inc(labels);
          log.warn({ registrar: state.registrar, user: state.user, status: state.status, failures: state.failures }, 'SIP registration upstream failed; retrying');
        } else log.info({ registrar: state.registrar, user: state.user }, 'SIP registered upstream');
      },
    },
    calls: services.calls,
    auth: new DigestAuth(config.SIP_USERS),
    authAttempts: counters ?? new AuthBackoff(config.SIP_AUTH_MAX_FAILURES),
    refused: (limit) => services.metrics.rateLimited.inc({ limit }),
    trusted,
    owner: async () => {
      const active = (await services.apiKeys.list()).filter((k) => !k.revokedAt);
      if (config.SIP_API_KEY_ID) return active.find((k) => k.id === config.SIP_API_KEY_ID)?.id;
      return active.sort((a, b) => a.createdAt.localeCompare(b.createdAt))[0]?.id;
    },
    session: () => openAiDefaultSession(services.sessionDefaults),
    routing: services.sipRouting,
    // A full or loaded node sends the caller to the least-loaded node with room that has a SIP door
    // of another address: a sibling worker shares ours, where the caller's Call-ID brings it back here.
    elsewhere: () =>
      services.placement.elsewhere({ door: 'sip', log, only: (n) => n.sip_address !== null && n.sip_address !== ownAddress }, async (node) => ({ status: 302, value: node.sip_address! })),
    log,
  }, listen);
  const closeCounts = async () => {
    await limits?.close();
    if (counters !== limits) await counters?.close();
  };
  const server = await started.catch(async (err: Error) => {
    await closeCounts();
    if (!(err instanceof SipBindError)) throw err;
    throw sipBindFailure(err);
  });
  log.info({ sip: server.ports, relayed: relayed !== undefined }, 'SIP front door listening');
  services.sipDialer.dialer = server.outbound;
  ownAddress = hostPort(config.ICE_PUBLIC_IP || host, server.ports.udp);
  await services.announceSip(ownAddress).catch((err: Error) => log.warn({ err: err.message }, 'could not record the SIP address in the registry yet (the next heartbeat will)'));
  if (config.SIP_REGISTRATIONS.length) services.readiness.register('sip_registrations', () => registrationsHealth(server.registrationStates));
  return {
    close: async () => {
      services.sipDialer.dialer = undefined;
      await server.close();
      await closeCounts();
    },
  };
}

/** SIP's sockets as the settings describe them, opened by a node of its own or by the workers' primary. */
export function sipSocketOptions(config: Config, log: SipSocketOptions['log']): Omit<SipSocketOptions, 'refusedConnection'> {
  const trusted = trustedOf(config);
  return {
    host: config.SIP_HOST || config.HOST,
    port: config.SIP_PORT!,
    // The certificate HTTPS serves also secures SIP signalling (the media stays plain RTP).
    tls: config.TLS_CERT_FILE && config.TLS_KEY_FILE ? { port: config.SIP_TLS_PORT ?? (config.SIP_PORT && config.SIP_PORT < 65535 ? config.SIP_PORT + 1 : 0), cert: config.TLS_CERT_FILE, key: config.TLS_KEY_FILE } : undefined,
    maxConnectionsPerSource: config.SIP_TCP_MAX_CONNECTIONS_PER_IP,
    unlimitedSource: (address) => trusted !== undefined && contains(trusted, address),
    idleMs: config.SIP_TCP_IDLE_TIMEOUT_MS,
    log,
  };
}

/** A port SIP's sockets could not open, as a node's startup tells it. */
export function sipBindFailure(err: SipBindError): Error {
  return err.which === 'tls'
    ? bindFailure(err.cause, 'SIP over TLS', err.host, err.port, 'SIP_TLS_PORT')
    : bindFailure(err.cause, 'SIP', err.host, err.port, 'SIP_PORT (or SIP_HOST)');
}

const trustedOf = (config: Config) => (config.SIP_TRUSTED_CIDRS.length ? blockList(config.SIP_TRUSTED_CIDRS) : undefined);

/**
 * /readyz's view of the upstream registrations: degraded (still serving: other calls come in)
 * while any is not in force, with each one's state in words.
 */
function registrationsHealth(states: RegistrationState[]): Health {
  const words = states.map((s) =>
    s.state === 'registered'
      ? `${s.user}@${s.registrar} registered (${Math.max(0, Math.round((s.expiresAt! - Date.now()) / 1000))} s left)`
      : s.state === 'registering'
        ? `${s.user}@${s.registrar} registering`
        : `${s.user}@${s.registrar} failed (${s.status === 0 ? 'registrar name unresolved' : s.status === 408 ? 'no answer' : `status ${s.status}`}; ${s.failures} in a row, retrying)`,
  );
  return { state: states.every((s) => s.state === 'registered') ? 'ready' : 'degraded', detail: words.join('; ') };
}
