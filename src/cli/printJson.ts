// The CLI's `--json` output: snake_case keys, as every JSON body of the HTTP API and every event has,
// so a script reads `revoked_at` from `keys list --json` as it does from the API. The store's records
// are camelCase TypeScript objects; only their keys are renamed (string values, such as a delivery's
// payload, are left as they are).

/** `lastUsedAt` → `last_used_at`. */
export function snakeCase(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

function withSnakeCaseKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withSnakeCaseKeys);
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [snakeCase(k), withSnakeCaseKeys(v)]));
  }
  return value;
}

/** Writes `value` to stdout as indented JSON with snake_case keys. */
export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(withSnakeCaseKeys(value), null, 2) + '\n');
}
