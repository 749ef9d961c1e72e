// Reaching WebRTC callers: the embedded STUN server, TURN (and its per-key secrets), the server's
// own peer connections and the ice-config each token gets.
import { join } from 'node:path';
import type { Config } from '../config/env.js';
import { libDataChannelFactory } from '../calls/webrtc/peer/libdatachannel.js';
import type { PeerFactory } from '../calls/webrtc/peer/types.js';
import { weriftFactory } from '../calls/webrtc/peer/werift.js';
import { buildIceServers, type IceServerEntry } from '../ice/iceConfig.js';
import { serverIceServers } from '../ice/serverIceServers.js';
import { embeddedStunUrl, startStunServer, stunUrlsOfTurnServers, type StunServer } from '../ice/stunServer.js';
import { TurnKeySecrets } from '../ice/turnKeySecrets.js';
import { TurnService, type TurnHealth } from '../ice/turnService.js';
import type { Metrics } from '../observability/metrics.js';
import type { Health } from '../observability/readiness.js';
import type { Teardown } from '../system/teardown.js';
import type { Log } from './types.js';

export interface NodeRole {
  /** A worker whose primary process runs Parley's coturn (on TURN_PORT): this one only checks it. */
  coturnRunsElsewhere?: boolean;
}

export async function startStun(config: Config, deps: { log: Log }, teardown: Teardown): Promise<StunServer | undefined> {
  if (!config.STUN_ENABLED) return undefined;
  const stun = await startStunServer({ host: config.STUN_BIND || config.HOST, port: config.STUN_PORT });
  teardown.add('STUN server', () => stun.close());
  deps.log.info({ stun: stun.address }, 'embedded STUN server listening');
  return stun;
}

export interface TurnPart {
  turn: TurnService;
  /** Parley's own coturn takes a secret per API key, so a revoked key's credentials stop at once. */
  turnKeys: TurnKeySecrets | undefined;
}

export async function startTurn(
  config: Config,
  deps: { turnSecrets: string[]; metrics: Metrics; log: Log; role: NodeRole },
  teardown: Teardown,
): Promise<TurnPart> {
  const { turnSecrets, metrics, log, role } = deps;
  const turn = await TurnService.start(config, turnSecrets, log, (url, up) => metrics.turnUp.set({ url }, up ? 1 : 0), role);
  teardown.add('TURN service', () => turn.close());
  const turnKeys = turn.health().managed
    ? new TurnKeySecrets(join(config.DATA_DIR, 'coturn', 'turndb'), turnSecrets[0]!, config.TURN_REALM, config.TURN_CREDENTIAL_TTL_SECONDS)
    : undefined;
  if (turnKeys) teardown.add('TURN key secrets', () => turnKeys.close());
  return { turn, turnKeys };
}

/** The server's side of WebRTC calls: its own STUN/TURN list is built per peer connection, as its TURN credentials expire. */
export function peersOf(config: Config, turnSecrets: string[]): PeerFactory {
  const peerFactory = config.WEBRTC_STACK === 'werift' ? weriftFactory : libDataChannelFactory;
  const peerOptions = {
    ...(config.ICE_BIND_ADDRESS ? { bindAddress: config.ICE_BIND_ADDRESS } : {}),
    ...(config.ICE_PORT_RANGE ? { portRange: config.ICE_PORT_RANGE } : {}),
    ...(config.ICE_PUBLIC_IP ? { publicIp: config.ICE_PUBLIC_IP } : {}),
  };
  return {
    name: peerFactory({ ...peerOptions, iceServers: [] }).name,
    create: (label) =>
      peerFactory({
        ...peerOptions,
        iceServers: serverIceServers(config.SERVER_ICE_SERVERS, turnSecrets[0], config.TURN_CREDENTIAL_TTL_SECONDS),
      }).create(label),
  };
}

/** ice-config's body for a token of a key (Services.iceServers). */
export function iceServersOf(
  config: Config,
  ice: { stun: StunServer | undefined; turnSecrets: string[] } & TurnPart,
): (token: { jti: string; exp: number }, apiKeyId: string) => IceServerEntry[] {
  const { stun, turn, turnKeys, turnSecrets } = ice;
  return (token, apiKeyId) => {
    const turnUrls = turn.upUrls();
    // A call may start as late as the token's end and last its maximum duration: no credential needs longer.
    const tokenLeft = Math.max(0, token.exp - Math.floor(Date.now() / 1000));
    const ttl = Math.min(config.TURN_CREDENTIAL_TTL_SECONDS, tokenLeft + Math.ceil(config.CALL_MAX_DURATION_MS / 1000));
    return buildIceServers(
      {
        stunUrls: config.STUN_URLS ?? (stun ? [embeddedStunUrl(stun.address, config.ICE_PUBLIC_IP)] : stunUrlsOfTurnServers(turn.upUrls())),
        turnUrls,
        turnSecret: turnUrls.length ? (turnKeys?.grant(apiKeyId) ?? turnSecrets[0]) : undefined,
        turnTtlSeconds: ttl,
      },
      token.jti,
    );
  };
}

/** TURN is usable when it is off by choice or at least one server answers its checks. */
export function turnReadiness(h: TurnHealth): Health {
  if (!h.enabled) return { state: 'ready', detail: 'TURN disabled (TURN_ENABLED=false)' };
  const down = h.servers.filter((s) => !s.up);
  if (!down.length) return { state: 'ready' };
  const detail = `not answering: ${down.map((s) => `${s.url}${s.error ? ` (${s.error})` : ''}`).join(', ')}`;
  return { state: h.ok ? 'degraded' : h.servers.some((s) => s.checkedAt) ? 'failed' : 'starting', detail };
}
