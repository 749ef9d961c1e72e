// The demo route hands out tokens only where it should: by default on a loopback bind with no proxy
// in front (this machine only), anywhere with DEMO_ENABLED=true, nowhere with DEMO_ENABLED=false.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { demoMode, isLoopbackHost } from '../../src/config/demoMode.ts';

test('the demo is on by default on a loopback HOST only; DEMO_ENABLED=true anywhere; false nowhere', () => {
  const noProxy: string[] = [];
  for (const HOST of ['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost', '::ffff:127.0.0.1']) {
    assert.equal(isLoopbackHost(HOST), true, HOST);
    assert.equal(demoMode({ DEMO_ENABLED: undefined, HOST, TRUST_PROXY: noProxy }), 'local', HOST);
    assert.equal(demoMode({ DEMO_ENABLED: false, HOST, TRUST_PROXY: noProxy }), 'off', HOST);
  }
  for (const HOST of ['0.0.0.0', '::', '192.168.1.10', '203.0.113.5', 'parley.example', '127.0.0.1.nip.io']) {
    assert.equal(isLoopbackHost(HOST), false, HOST);
    assert.equal(demoMode({ DEMO_ENABLED: undefined, HOST, TRUST_PROXY: noProxy }), 'off', HOST);
    assert.equal(demoMode({ DEMO_ENABLED: true, HOST, TRUST_PROXY: noProxy }), 'on', HOST);
  }
});

test('a reverse proxy in front (TRUST_PROXY) makes a loopback bind public: the demo is off unless enabled', () => {
  assert.equal(demoMode({ DEMO_ENABLED: undefined, HOST: '127.0.0.1', TRUST_PROXY: ['loopback'] }), 'off');
  assert.equal(demoMode({ DEMO_ENABLED: true, HOST: '127.0.0.1', TRUST_PROXY: ['loopback'] }), 'on');
});
