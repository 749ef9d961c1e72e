// SIP_REGISTRATIONS as the operator writes it: sip:user:password@registrar[:port][;expires=N], the
// password percent-decoded, defaults filled in, a malformed entry refused without being echoed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig } from '../../src/config/env.ts';
import { configProblems } from '../helpers/config.ts';

test('SIP_REGISTRATIONS: entries read with their defaults; bad ones refused without echoing the password', () => {
  const config = loadConfig({ SIP_REGISTRATIONS: 'sip:1001:s%40cret%2C1@pbx.example.net, sip:trunk:pw@[2001:db8::5]:5080;expires=300' });
  assert.deepEqual(config.SIP_REGISTRATIONS, [
    { user: '1001', password: 's@cret,1', host: 'pbx.example.net', port: 5060, expires: 600 },
    { user: 'trunk', password: 'pw', host: '2001:db8::5', port: 5080, expires: 300 },
  ]);
  const problem = configProblems({ SIP_REGISTRATIONS: 'trunk:hunter2@pbx.example.net' });
  assert.match(problem, /SIP_REGISTRATIONS/);
  assert.doesNotMatch(problem, /hunter2/);
  assert.match(configProblems({ SIP_REGISTRATIONS: 'sip:a:b@host;expires=10' }), /expires must be 60/);
  assert.equal(loadConfig({}).SIP_REGISTRATIONS.length, 0);
});
