// Direct database access for tests that must set up rows the API cannot make (an id above 2^53)
// or inspect what was stored (the password hash format).

import { loadConfig } from '../../src/config.ts';
import { openDatabase } from '../../src/db/database.ts';
import type { Store } from './stores.ts';

export function openTestDatabase(store: Store) {
  return openDatabase(store.url, loadConfig({}).database);
}
