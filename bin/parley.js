#!/usr/bin/env node
// Runs the TypeScript CLI through tsx, so `npx parley ...` works from a checkout.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
