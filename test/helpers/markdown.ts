// Markdown as the docs test and the tests that run the docs' commands read it: fenced code blocks
// (with the line before each, where the docs say what runs a shell block) and the prose around them.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export interface Block {
  line: number;
  lang: string;
  before: string;
  body: string;
}

/** The file's fenced code blocks, and its prose (code blocks blanked, line numbers kept). */
export function parse(text: string): { blocks: Block[]; prose: string[] } {
  const lines = text.split('\n');
  const blocks: Block[] = [];
  const prose: string[] = [];
  let open: { fence: string; block: Block } | undefined;
  let lastNonBlank = '';
  lines.forEach((line, i) => {
    const fence = /^(\s*)(`{3,}|~{3,})\s*([^\s`]*)/.exec(line);
    if (open) {
      if (fence && fence[2]!.startsWith(open.fence) && line.trim() === fence[2]) open = undefined;
      else open.block.body += line + '\n';
      prose.push('');
      return;
    }
    if (fence) {
      const block = { line: i + 1, lang: fence[3]!.toLowerCase(), before: lastNonBlank.trim(), body: '' };
      blocks.push(block);
      open = { fence: fence[2]!, block };
      prose.push('');
      return;
    }
    prose.push(line);
    if (line.trim()) lastNonBlank = line;
  });
  return { blocks, prose };
}

const ROOT = resolve(import.meta.dirname, '../..');

/**
 * The shell block of a doc (a path from the repository's root) that contains `marker`, for a test
 * that runs it: exactly one block must match, so a doc's edit cannot make the test run another.
 */
export function shellBlock(doc: string, marker: string): string {
  const found = parse(readFileSync(join(ROOT, doc), 'utf8')).blocks.filter((b) => ['sh', 'bash'].includes(b.lang) && b.body.includes(marker));
  if (found.length !== 1) throw new Error(`${doc}: ${found.length} shell blocks contain ${JSON.stringify(marker)}, not one`);
  return found[0]!.body;
}
