import type { Kysely } from 'kysely';
import type { Tables } from '../../../src/db/schema.ts';
import './tables.ts';

export interface Note {
  id: bigint;
  text: string;
  createdAt: Date;
}

/** The only code that touches the example feature's table. */
export class NotesRepository {
  readonly #db: Kysely<Tables>;
  constructor(db: Kysely<Tables>) {
    this.#db = db;
  }

  async add(userId: bigint, text: string, at: number): Promise<Note> {
    const row = await this.#db
      .insertInto('example_notes')
      .values({ user_id: userId, text, added_at: at })
      .returning(['id', 'text', 'added_at'])
      .executeTakeFirstOrThrow();
    return { id: BigInt(row.id), text: row.text, createdAt: new Date(Number(row.added_at)) };
  }

  async list(userId: bigint): Promise<Note[]> {
    const rows = await this.#db
      .selectFrom('example_notes')
      .select(['id', 'text', 'added_at'])
      .where('user_id', '=', userId)
      .orderBy('id')
      .execute();
    return rows.map((row) => ({
      id: BigInt(row.id),
      text: row.text,
      createdAt: new Date(Number(row.added_at)),
    }));
  }
}
