// The API key behind the demo's proxy route. It stays on the server: DEMO_API_KEY when set, else a
// key created on first use whose secret lives only in this process's memory (revoked at shutdown,
// so the store never keeps a live key nobody holds).
import type { ApiKeyStore } from '../../auth/apiKeys.js';

export class DemoKey {
  private created?: Promise<{ key: string; id: string }>;

  constructor(
    private readonly apiKeys: ApiKeyStore,
    private readonly configured: string | undefined,
  ) {}

  /** Which kind of key the demo uses (for the start-up log; never the key itself). */
  get source(): 'DEMO_API_KEY' | 'in-memory' {
    return this.configured ? 'DEMO_API_KEY' : 'in-memory';
  }

  async key(): Promise<string> {
    if (this.configured) return this.configured;
    // Created lazily: creating it at start would make the store look non-empty before the
    // development key is created.
    this.created ??= this.apiKeys.create('demo page (in-memory key)').then(({ key, record }) => ({ key, id: record.id }));
    try {
      return (await this.created).key;
    } catch (err) {
      this.created = undefined;
      throw err;
    }
  }

  /** Revokes the in-memory key, if one was created. */
  async dispose(): Promise<void> {
    if (!this.created) return;
    const { id } = await this.created.catch(() => ({ id: undefined }));
    this.created = undefined;
    if (id) await this.apiKeys.revoke(id);
  }
}
