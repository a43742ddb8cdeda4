import type { ColumnType } from 'kysely';

/** A note an account keeps (the example feature's one table). */
export interface ExampleNotesTable {
  id: ColumnType<bigint, never, never>;
  user_id: ColumnType<bigint, bigint, never>;
  text: string;
  added_at: ColumnType<bigint, number, never>;
}

declare module '../../../src/db/schema.ts' {
  interface Tables {
    example_notes: ExampleNotesTable;
  }
}
