// The README's configuration table, generated from the settings in src/config/env.ts (the one source).
//   node --import tsx scripts/config-table.ts           print it
//   node --import tsx scripts/config-table.ts --write   rewrite it in README.md between the markers
import { readFileSync, writeFileSync } from 'node:fs';
import { settings } from '../src/config/env.ts';

export function configTable(): string {
  const rows = Object.entries(settings).map(([name, s]) => {
    const def = 'default' in s && s.default !== undefined ? (s.default === '' ? '(empty)' : `\`${s.default}\``) : '(unset)';
    return `| \`${name}\` | ${def} | ${s.doc.replace(/\|/g, '\\|')} |`;
  });
  return ['| Variable | Default | Meaning |', '|---|---|---|', ...rows].join('\n');
}

export const README_MARKERS = /<!-- config-table -->[\s\S]*?<!-- \/config-table -->/;

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) {
  if (process.argv.includes('--write')) {
    const readme = readFileSync('README.md', 'utf8');
    writeFileSync('README.md', readme.replace(README_MARKERS, `<!-- config-table -->\n${configTable()}\n<!-- /config-table -->`));
  } else {
    process.stdout.write(configTable() + '\n');
  }
}
