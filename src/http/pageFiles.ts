// The static files of a page Parley serves itself (the demo, the console): read once at start from
// its folder (a handful of small files), each with its content type; nothing else in the folder is served.
import { readFileSync, readdirSync } from 'node:fs';
import { extname } from 'node:path';

export interface PageFile {
  body: Buffer;
  type: string;
}

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

/** The folder's files by name. */
export function loadPageFiles(dir: URL): Map<string, PageFile> {
  const files = new Map<string, PageFile>();
  for (const name of readdirSync(dir)) {
    const type = CONTENT_TYPES[extname(name)];
    if (type) files.set(name, { body: readFileSync(new URL(name, dir)), type });
  }
  return files;
}
