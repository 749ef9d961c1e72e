// What loadConfig says of an environment: its problems in one message, or '' when it is accepted.
import { loadConfig, type ConfigError } from '../../src/config/env.ts';

export function configProblems(env: NodeJS.ProcessEnv): string {
  try {
    loadConfig(env);
    return '';
  } catch (err) {
    return (err as ConfigError).message;
  }
}
