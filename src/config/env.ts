// Configuration: every setting comes from an environment variable (or `.env` in development),
// parsed and validated once at start. The settings are declared by area in src/config/settings/ and merged here into
// the one table, which is also the source of docs/reference/configuration.md's list.
import { loadModelCatalogue, ModelFileError, type ModelCatalogue } from './models.js';
import type { Setting } from './parsers.js';
import { serverSettings } from './settings/server.js';
import { accessSettings } from './settings/access.js';
import { observabilitySettings } from './settings/observability.js';
import { clusterSettings } from './settings/cluster.js';
import { recordingsSettings } from './settings/recordings.js';
import { iceSettings } from './settings/ice.js';
import { sipSettings } from './settings/sip.js';
import { callsSettings } from './settings/calls.js';
import { agentSettings } from './settings/agent.js';
import { webhooksSettings } from './settings/webhooks.js';

export type { SipOutboundAllow, SipRegistrationSetting, SipTrunkSetting } from './parsers.js';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
  }
}

/** Every variable Parley reads, area by area (the reference lists them in this order). */
export const settings = {
  ...serverSettings,
  ...accessSettings,
  ...observabilitySettings,
  ...clusterSettings,
  ...recordingsSettings,
  ...iceSettings,
  ...sipSettings,
  ...callsSettings,
  ...agentSettings,
  ...webhooksSettings,
} satisfies Record<string, Setting<unknown>>;

type Settings = typeof settings;
type Parsed = { [K in keyof Settings]: ReturnType<Settings[K]['parse']> | (Settings[K] extends { default: string } ? never : undefined) };
/** DATABASE_URL's default depends on DATA_DIR, so it is always set after loading. */
export type Config = Omit<Parsed, 'DATABASE_URL'> & { DATABASE_URL: string; /** The model catalogue (MODELS_FILE, or the settings). */ MODELS: ModelCatalogue };

/** Rules between settings. */
/** Rules between settings; a setting that did not parse is undefined and its rules do not apply. */
function crossChecks(c: Parsed): string[] {
  const problems: string[] = [];
  // A provider chosen by name needs its service's URL.
  if (c.STT_PROVIDER === 'http' && !c.STT_URL) problems.push('STT_PROVIDER: http needs STT_URL');
  if (c.TTS_PROVIDER === 'http' && !c.TTS_URL) problems.push('TTS_PROVIDER: http needs TTS_URL');
  if ((c.TLS_CERT_FILE === undefined) !== (c.TLS_KEY_FILE === undefined)) problems.push('TLS_CERT_FILE: TLS needs both TLS_CERT_FILE and TLS_KEY_FILE');
  if (c.OPUS_MIN_COMPLEXITY > c.OPUS_COMPLEXITY) problems.push('OPUS_MIN_COMPLEXITY: must be at most OPUS_COMPLEXITY');
  if (c.NODE_LOST_AFTER_MS < 2 * c.NODE_HEARTBEAT_MS) problems.push('NODE_LOST_AFTER_MS: must be at least twice NODE_HEARTBEAT_MS');
  if (c.HTTP_REQUEST_TIMEOUT_MS < c.HTTP_HEADERS_TIMEOUT_MS) problems.push('HTTP_REQUEST_TIMEOUT_MS: must be at least HTTP_HEADERS_TIMEOUT_MS');
  if (c.OTEL_BSP_MAX_EXPORT_BATCH_SIZE > c.OTEL_BSP_MAX_QUEUE_SIZE) problems.push('OTEL_BSP_MAX_EXPORT_BATCH_SIZE: must not exceed OTEL_BSP_MAX_QUEUE_SIZE');
  if ((c.WEBHOOK_URL === undefined) !== (c.WEBHOOK_SECRET === undefined)) problems.push('WEBHOOK_URL: webhooks need both WEBHOOK_URL and WEBHOOK_SECRET');
  return problems;
}

/** Parses every setting from `env`, collecting all problems before failing. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  const out: Record<string, unknown> = {};
  for (const [name, setting] of Object.entries(settings) as [string, Setting<unknown>][]) {
    const raw = env[name] ?? setting.default;
    if (raw === undefined || (raw === '' && setting.default === undefined)) {
      out[name] = undefined;
      continue;
    }
    try {
      out[name] = setting.parse(raw);
    } catch (err) {
      problems.push(`${name}: ${(err as Error).message}`);
    }
  }
  const parsed = out as Parsed;
  problems.push(...crossChecks(parsed));
  let models: ModelCatalogue | undefined;
  if (!problems.length) {
    try {
      models = loadModelCatalogue(parsed, env);
    } catch (err) {
      if (!(err instanceof ModelFileError)) throw err;
      problems.push(...err.problems.map((p) => `MODELS_FILE: ${p}`));
    }
  }
  if (problems.length || !models) throw new ConfigError(problems);
  return { ...parsed, DATABASE_URL: parsed.DATABASE_URL ?? `sqlite:${parsed.DATA_DIR.replace(/\/$/, '')}/parley.db`, MODELS: models };
}
