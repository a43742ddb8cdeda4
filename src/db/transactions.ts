import type { Kysely } from 'kysely';
import type { Tables } from './schema.ts';

/**
 * Runs `work` in one database transaction with repositories bound to it: every write it makes
 * commits together, or none does (a throw rolls back). Services receive one of these for each
 * change that takes more than one statement; repositories themselves never open transactions.
 */
export type InTransaction<R> = <T>(work: (repositories: R) => Promise<T>) => Promise<T>;

export function inTransaction<R>(db: Kysely<Tables>, bind: (trx: Kysely<Tables>) => R): InTransaction<R> {
  return (work) => db.transaction().execute((trx) => work(bind(trx)));
}
