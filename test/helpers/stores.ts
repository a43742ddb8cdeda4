// Each HTTP test file runs once per store, each run on a fresh database (see databases.ts).
import { after, before } from 'node:test';
import { freshDatabaseUrl, postgresAvailable, type StoreKind } from './databases.ts';
import { describeUnless } from './skip.ts';

export { freshDatabaseUrl, postgresAvailable, type StoreKind };

export interface Store {
  readonly kind: StoreKind;
  /** DATABASE_URL of this run's fresh database (set once the suite's `before` hook ran). */
  readonly url: string;
}

interface MutableStore extends Store {
  url: string;
  cleanup(): Promise<void>;
}

/**
 * Defines `suite` once per store. Without TEST_DATABASE_URL the PostgreSQL run is reported as
 * skipped (a "﹣ … [postgres] # TEST_DATABASE_URL is not set" line, counted in the summary's
 * skipped figure), so a missing server is visible in the test output instead of silently absent.
 */
export function describeEachStore(title: string, suite: (store: Store) => void): void {
  for (const kind of ['sqlite', 'postgres'] as const) {
    const skip = kind === 'postgres' && !postgresAvailable ? 'TEST_DATABASE_URL is not set' : false;
    describeUnless(skip, `${title} [${kind}]`, () => {
      const store: MutableStore = { kind, url: '', cleanup: async () => {} };
      before(async () => {
        const fresh = await freshDatabaseUrl(kind);
        store.url = fresh.url;
        store.cleanup = fresh.drop;
      });
      suite(store);
      after(() => store.cleanup());
    });
  }
}
