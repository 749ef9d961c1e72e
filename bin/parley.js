#!/usr/bin/env node
// The `parley` command: the compiled CLI when there is a build (`npm run build`; a production
// install has no tsx), else the TypeScript sources through tsx (a checkout that was never built).
import { existsSync } from 'node:fs';

const built = new URL('../dist/.built', import.meta.url);
if (existsSync(built)) {
  await import('../dist/cli/main.js');
} else {
  let register;
  try {
    ({ register } = await import('tsx/esm/api'));
  } catch {
    // Neither a build nor the dev dependencies that run the sources: say what to run, in one line.
    const installed = existsSync(new URL('../node_modules/', import.meta.url));
    process.stderr.write(
      `parley: this copy is not built${installed ? ' and has no dev dependencies (an `npm ci --omit=dev` install)' : ' and has no npm packages'}: ` +
        'run `npm ci && npm run build` here, or deploy a release made by scripts/build-release.sh\n',
    );
    process.exit(1);
  }
  register();
  // Processes the service forks (the speech engines' helper) inherit execArgv, not this registration.
  process.execArgv.push('--import', import.meta.resolve('tsx'));
  await import('../src/cli/main.ts');
}
