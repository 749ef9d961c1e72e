// Webhooks without a server: the backoff's bounds and window, the secrets' form and the settings'
// rules (claiming from the outbox on SQLite and PostgreSQL: test/engines/webhook-claims.test.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig } from '../../src/config/env.ts';
import { RETRY_WINDOW_MS, nextAttemptAt, retryDelayMs } from '../../src/webhooks/backoff.ts';
import { WebhookSecretBox, newWebhookSecret } from '../../src/webhooks/secrets.ts';
import { isWebhookSecret } from '../../src/config/webhookSecretFormat.ts';
import { configProblems } from '../helpers/config.ts';

test('retry delays grow exponentially from 1 s, capped, fully jittered', () => {
  const top = () => 0.999999;
  assert.equal(retryDelayMs(1, 3_600_000, top), 999);
  assert.equal(retryDelayMs(2, 3_600_000, top), 1999);
  assert.equal(retryDelayMs(5, 3_600_000, top), 15_999);
  assert.equal(retryDelayMs(30, 3_600_000, top), 3_599_996);
  assert.equal(retryDelayMs(1000, 3_600_000, top), 3_599_996);
  assert.equal(retryDelayMs(3, 3_600_000, () => 0), 0);
  assert.equal(retryDelayMs(3, 3_600_000, () => 0.5), 2000);
});

test('a delivery is retried until a day after its event, then given up', () => {
  const created = 1_000_000;
  assert.equal(nextAttemptAt(created, 3, 1000, created + RETRY_WINDOW_MS - 1, () => 0.5), created + RETRY_WINDOW_MS - 1 + 500);
  assert.equal(nextAttemptAt(created, 3, 1000, created + RETRY_WINDOW_MS, () => 0.5), null);
});

test('webhook secrets are whsec_ base64 and sealed at rest', () => {
  const secret = newWebhookSecret();
  assert.ok(isWebhookSecret(secret), secret);
  for (const bad of ['whsec_', 'whsec_short', 'sk_' + secret.slice(6), 'whsec_!!!!' + secret.slice(10)]) assert.equal(isWebhookSecret(bad), false, bad);
  const box = new WebhookSecretBox('p'.repeat(32));
  const sealed = box.seal(secret);
  assert.ok(!sealed.includes(secret.slice(6)));
  assert.equal(box.open(sealed), secret);
  assert.throws(() => new WebhookSecretBox('q'.repeat(32)).open(sealed), /API_KEY_PEPPER differs/);
});

test('WEBHOOK_URL and WEBHOOK_SECRET: both or neither, a valid secret, known events', () => {
  const secret = newWebhookSecret();
  const ok = loadConfig({ WEBHOOK_URL: 'http://127.0.0.1:9/hook', WEBHOOK_SECRET: secret, WEBHOOK_EVENTS: 'call.ended,call.turn' });
  assert.deepEqual(ok.WEBHOOK_EVENTS, ['call.ended', 'call.turn']);
  assert.deepEqual(loadConfig({}).WEBHOOK_EVENTS, ['call.started', 'call.ended', 'call.failed']);
  assert.match(configProblems({ WEBHOOK_URL: 'http://127.0.0.1:9/hook' }), /WEBHOOK_URL: webhooks need both/);
  assert.match(configProblems({ WEBHOOK_SECRET: secret }), /webhooks need both/);
  const badSecret = configProblems({ WEBHOOK_URL: 'http://127.0.0.1:9/', WEBHOOK_SECRET: 'whsec_tooshort' });
  assert.match(badSecret, /WEBHOOK_SECRET: expected whsec_/);
  assert.ok(!badSecret.includes('tooshort'), 'the secret is not repeated');
  assert.match(configProblems({ WEBHOOK_URL: 'ftp://x/', WEBHOOK_SECRET: secret }), /WEBHOOK_URL: expected an http\(s\) URL/);
  assert.match(configProblems({ WEBHOOK_EVENTS: 'call.ended,call.exploded' }), /WEBHOOK_EVENTS: unknown event type\(s\) call\.exploded/);
});
