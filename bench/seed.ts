// The accounts the per-feature benchmarks start from: users 1..count, u<id>@example.com, each with
// the one password hashed once with the production parameters, written 250 at a time. `batch`
// adds a benchmark's own rows for each batch of ids (its TOTP factors, its mailed links).
import { loadConfig } from '../src/config.ts';
import { type Database, openDatabase } from '../src/db/database.ts';
import { schemaMigrations } from '../src/features.ts';
import { PasswordHasher } from '../src/passwords/hasher.ts';

export async function seedUsers(
  url: string,
  count: number,
  password: string,
  batch?: (database: Database, ids: number[], now: string) => Promise<void>,
): Promise<void> {
  const database = openDatabase(url, loadConfig({}).database);
  try {
    await database.migrate(schemaMigrations());
    const hash = await new PasswordHasher({ ...loadConfig({}).passwordHash, concurrency: 1 }).hash(password);
    const now = new Date().toISOString();
    for (let start = 1; start <= count; start += 250) {
      const ids = Array.from({ length: Math.min(250, count - start + 1) }, (_, i) => start + i);
      await database.db
        .insertInto('users')
        .values(
          ids.map((id) => ({
            email: `u${id}@example.com`,
            email_key: `u${id}@example.com`,
            name: `User ${id}`,
            created_at: now,
            updated_at: now,
          })),
        )
        .execute();
      await database.db
        .insertInto('password_credentials')
        .values(ids.map((id) => ({ user_id: BigInt(id), hash, changed_at: Date.now() })))
        .execute();
      await batch?.(database, ids, now);
    }
  } finally {
    await database.close();
  }
}
