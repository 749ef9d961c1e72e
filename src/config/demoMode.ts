// Whether the demo page is served: the HTTP route serves it and the start-up line points at it,
// so both read it from here. On by default only where nobody but this machine can reach it.
import type { Config } from './env.js';

/** on: DEMO_ENABLED=true; local: by default on a loopback bind with no proxy in front; off. */
export type DemoMode = 'on' | 'local' | 'off';

export function demoMode(config: Pick<Config, 'DEMO_ENABLED' | 'HOST' | 'TRUST_PROXY'>): DemoMode {
  if (config.DEMO_ENABLED !== undefined) return config.DEMO_ENABLED ? 'on' : 'off';
  return isLoopbackHost(config.HOST) && config.TRUST_PROXY.length === 0 ? 'local' : 'off';
}

/** 127.0.0.0/8, ::1 (and its IPv4-mapped form) or localhost: reachable from this machine only. */
export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^(::ffff:)?127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}
