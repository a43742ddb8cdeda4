// Each HTTP test file runs once per store, each run on a fresh database: a new SQLite file, or a
// new PostgreSQL database created on the server TEST_DATABASE_URL points at.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe } from 'node:test';
import pg from 'pg';

export type StoreKind = 'sqlite' | 'postgres';

const PG_ADMIN_URL = process.env.TEST_DATABASE_URL || undefined;

export interface Store {
  readonly kind: StoreKind;
  /** DATABASE_URL of this run's fresh database (set once the suite's `before` hook ran). */
  readonly url: string;
}

interface MutableStore extends Store {
  url: string;
  cleanup(): Promise<void>;
}

async function createPostgresDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  const name = `usher_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  try {
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(PG_ADMIN_URL!);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: PG_ADMIN_URL });
      await client.connect();
      try {
        await client.query(`drop database if exists ${name} with (force)`);
      } finally {
        await client.end();
      }
    },
  };
}

function createSqliteFile(): { url: string; drop: () => Promise<void> } {
  const dir = mkdtempSync(join(tmpdir(), 'usher-test-'));
  return {
    url: `sqlite:${join(dir, 'usher.db')}`,
    drop: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

export async function freshDatabaseUrl(kind: StoreKind): Promise<{ url: string; drop: () => Promise<void> }> {
  return kind === 'sqlite' ? createSqliteFile() : createPostgresDatabase();
}

export const postgresAvailable = PG_ADMIN_URL !== undefined;

/**
 * Defines `suite` once per store. Without TEST_DATABASE_URL the PostgreSQL run is reported as
 * skipped, so a missing server is visible in the test output instead of silently absent.
 */
export function describeEachStore(title: string, suite: (store: Store) => void): void {
  for (const kind of ['sqlite', 'postgres'] as const) {
    const skip = kind === 'postgres' && !postgresAvailable ? 'TEST_DATABASE_URL is not set' : false;
    describe(`${title} [${kind}]`, { skip }, () => {
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
