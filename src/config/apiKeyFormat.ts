// What a Parley API key looks like. Here, below auth, because a setting (DEMO_API_KEY) must be one.

export const API_KEY_PREFIX = 'sk_parley_ai_';
const API_KEY_PATTERN = /^sk_parley_ai_[0-9A-Za-z]{32,128}$/;

export function looksLikeApiKey(value: string): boolean {
  return API_KEY_PATTERN.test(value);
}
