// Webhook signing secrets: `whsec_` + base64 of 32 random bytes (the Standard Webhooks form), kept
// in the store encrypted with a key derived from the pepper, as the token signing keys are.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { WEBHOOK_SECRET_PREFIX } from '../config/webhookSecretFormat.js';

export function newWebhookSecret(): string {
  return WEBHOOK_SECRET_PREFIX + randomBytes(32).toString('base64');
}

export class WebhookSecretBox {
  private readonly key: Buffer;

  constructor(pepper: string) {
    this.key = Buffer.from(hkdfSync('sha256', pepper, 'parley', 'webhook-secret-encryption', 32));
  }

  seal(secret: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const ct = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ct.toString('base64url')].join('.');
  }

  open(stored: string): string {
    const [version, iv, tag, ct] = stored.split('.');
    if (version !== 'v1' || !iv || !tag || !ct) throw new Error('unreadable webhook secret in the store');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    try {
      return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      throw new Error('cannot decrypt a webhook secret: API_KEY_PEPPER differs from the one it was stored with');
    }
  }
}
