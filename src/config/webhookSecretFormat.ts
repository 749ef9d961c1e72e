// What a webhook signing secret looks like: `whsec_` + base64 (the Standard Webhooks form). Here,
// below webhooks, because a setting (WEBHOOK_SECRET) must be one.

export const WEBHOOK_SECRET_PREFIX = 'whsec_';

/** Whether `secret` is whsec_ followed by base64 of at least 24 bytes. */
export function isWebhookSecret(secret: string): boolean {
  if (!secret.startsWith(WEBHOOK_SECRET_PREFIX)) return false;
  const body = secret.slice(WEBHOOK_SECRET_PREFIX.length);
  return /^[A-Za-z0-9+/]+={0,2}$/.test(body) && body.length % 4 === 0 && Buffer.from(body, 'base64').length >= 24;
}
