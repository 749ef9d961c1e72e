// The SQLite driver for this Node: better-sqlite3 13 (Node-API, its binary shipped in the package)
// on Node 22 and later, 12 (compiled at install) on Node 20. 12's statements are Node ObjectWraps
// whose destructor aborts Node 24 when the garbage collector finalizes one ("Assertion failed:
// (env) != nullptr", WiseLibs/better-sqlite3#1515: seen here within seconds of a start), and 13 does
// not load on Node 20. Both have the same API. When Node 20 support ends, 12 goes.
import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

const require = createRequire(import.meta.url);
const nodeMajor = Number(process.versions.node.split('.')[0]);

/** The better-sqlite3 Database class that is safe on this Node. */
export const SQLite: typeof BetterSqlite3 = nodeMajor >= 22 ? require('better-sqlite3-napi') : require('better-sqlite3');
export type SQLiteDatabase = BetterSqlite3.Database;
