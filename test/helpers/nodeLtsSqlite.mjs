// Preloaded (NODE_OPTIONS=--import) when production-install.test.ts runs the unit tier under Node 24:
// the checkout's better-sqlite3 addon is compiled for the machine's Node 20, another ABI, so loading
// it under 24 fails; the release that test installed under Node 24 holds the same version compiled
// for 24 (PARLEY_TEST_SQLITE_ADDON), and this hook sends the addon's resolution there.
import { registerHooks } from 'node:module';
import { pathToFileURL } from 'node:url';

const addon = process.env.PARLEY_TEST_SQLITE_ADDON;
if (!addon) throw new Error('nodeLtsSqlite.mjs: PARLEY_TEST_SQLITE_ADDON names no addon');

registerHooks({
  resolve(specifier, context, nextResolve) {
    if (specifier.endsWith('/better-sqlite3/build/Release/better_sqlite3.node')) return { url: pathToFileURL(addon).href, shortCircuit: true };
    return nextResolve(specifier, context);
  },
});
