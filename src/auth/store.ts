// The store and the key material it needs: the database (migrated), the API key pepper, the TURN
// secrets, the Redis bus. Cheap to load, so the CLI opens it without the service's modules.
import { ClientSecretSessionStore } from '../storage/clientSecretSessions.js';
import { ConsoleLogoutStore } from '../storage/consoleLogouts.js';
import { ConversationStore } from '../storage/conversations.js';
import { SipBindingStore } from '../storage/sipBindings.js';
import { openBus, type InvalidationBus } from '../storage/bus.js';
import { openDatabase, type DatabaseLog, type Db, type OpenDatabase } from '../storage/db.js';
import { migrate } from '../storage/migrations.js';
import type { Config } from '../config/env.js';
import { ApiKeyStore } from './apiKeys.js';
import { loadOrCreateLocalSecrets } from './localSecrets.js';
import { SigningKeyStore } from './signingKeys.js';

/** Storage and key material: what the CLI needs too. */
export interface Store {
  db: Db;
  database: OpenDatabase;
  /** API key hashes and the webhook secrets' box derive from it. */
  pepper: string;
  apiKeys: ApiKeyStore;
  signingKeys: SigningKeyStore;
  conversations: ConversationStore;
  clientSecretSessions: ClientSecretSessionStore;
  /** Console sessions logged out before their expiry, refused on every node. */
  consoleLogouts: ConsoleLogoutStore;
  /** SIP phones registered with the registrar, seen by every node. */
  sipBindings: SipBindingStore;
  turnSecrets: string[];
  /** Cross-node notices (Redis), so a revocation or rotation takes effect everywhere at once. */
  bus: InvalidationBus;
}

export async function openStore(config: Config, log?: DatabaseLog): Promise<Store> {
  const needsLocal = !config.API_KEY_PEPPER || !config.TURN_SECRETS;
  const local = needsLocal ? loadOrCreateLocalSecrets(config.DATA_DIR) : undefined;
  const pepper = config.API_KEY_PEPPER ?? local!.apiKeyPepper;
  const database = await openDatabase(config.DATABASE_URL, log);
  const { db } = database;
  await migrate(db);
  const signingKeys = new SigningKeyStore(db, pepper, database.availability);
  await signingKeys.init();
  return {
    db,
    database,
    pepper,
    apiKeys: new ApiKeyStore(db, pepper),
    signingKeys,
    conversations: new ConversationStore(db),
    clientSecretSessions: new ClientSecretSessionStore(db),
    consoleLogouts: new ConsoleLogoutStore(db),
    sipBindings: new SipBindingStore(db),
    bus: openBus(config.REDIS_URL),
    turnSecrets: config.TURN_SECRETS ?? [local!.turnSecret],
  };
}
