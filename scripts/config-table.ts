// The configuration reference's table (docs/reference/configuration.md), generated from the settings
// in src/config/env.ts (the one source).
//   node --import tsx scripts/config-table.ts           print it
//   node --import tsx scripts/config-table.ts --write   rewrite it in docs/reference/configuration.md between the markers
import { readFileSync, writeFileSync } from 'node:fs';
import { settings } from '../src/config/env.ts';

export const CONFIG_DOC = 'docs/reference/configuration.md';

export function configTable(): string {
  const rows = Object.entries(settings).map(([name, s]) => {
    const def = 'default' in s && s.default !== undefined ? (s.default === '' ? '(empty)' : `\`${s.default}\``) : '(unset)';
    return `| \`${name}\` | ${def} | ${s.doc.replace(/\|/g, '\\|')} |`;
  });
  return ['| Variable | Default | Meaning |', '|---|---|---|', ...rows].join('\n');
}

export const CONFIG_TABLE_MARKERS = /<!-- config-table -->[\s\S]*?<!-- \/config-table -->/;

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) {
  if (process.argv.includes('--write')) {
    const doc = readFileSync(CONFIG_DOC, 'utf8');
    writeFileSync(CONFIG_DOC, doc.replace(CONFIG_TABLE_MARKERS, `<!-- config-table -->\n${configTable()}\n<!-- /config-table -->`));
  } else {
    process.stdout.write(configTable() + '\n');
  }
}
