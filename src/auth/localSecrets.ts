// Secrets a single-node install generates for itself on first start, kept beside the SQLite file
// (never in the database, so a copy of the database alone reveals nothing usable).
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface LocalSecrets {
  apiKeyPepper: string;
  turnSecret: string;
}

export function loadOrCreateLocalSecrets(dataDir: string): LocalSecrets {
  const file = join(dataDir, 'secrets.json');
  if (existsSync(file)) {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<LocalSecrets>;
    if (typeof parsed.apiKeyPepper === 'string' && typeof parsed.turnSecret === 'string') {
      return parsed as LocalSecrets;
    }
    throw new Error(`${file} is damaged: expected apiKeyPepper and turnSecret`);
  }
  mkdirSync(dataDir, { recursive: true });
  const secrets: LocalSecrets = {
    apiKeyPepper: randomBytes(32).toString('base64url'),
    turnSecret: randomBytes(32).toString('base64url'),
  };
  writeFileSync(file, JSON.stringify(secrets, null, 2) + '\n', { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return secrets;
}
