// Fresh databases on demand: a new SQLite file, or a new PostgreSQL database created on the server
// TEST_DATABASE_URL points at. Shared by the tests and the benchmarks.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export type StoreKind = 'sqlite' | 'postgres';

export const PG_ADMIN_URL = process.env.TEST_DATABASE_URL || undefined;

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
