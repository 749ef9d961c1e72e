// The README stays true: its configuration table is the one generated from src/config/env.ts.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { README_MARKERS, configTable } from '../scripts/config-table.ts';

test('README lists every setting with its default (run scripts/config-table.ts --write after changing settings)', () => {
  const block = README_MARKERS.exec(readFileSync('README.md', 'utf8'))?.[0];
  assert.ok(block, 'README has the config-table markers');
  assert.equal(block.replace(/<!-- \/?config-table -->\n?/g, '').trim(), configTable().trim());
});
