#!/usr/bin/env node
// The `parley` command: the compiled CLI when there is a build (`npm run build`; a production
// install has no tsx), else the TypeScript sources through tsx (a checkout that was never built).
import { existsSync } from 'node:fs';

const built = new URL('../dist/.built', import.meta.url);
if (existsSync(built)) {
  await import('../dist/cli/main.js');
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/main.ts');
}
