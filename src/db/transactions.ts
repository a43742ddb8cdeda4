import type { Kysely } from 'kysely';
import type { Tables } from './schema.ts';

/**
 * Runs `work` in one database transaction with repositories bound to it: every write it makes
 * commits together, or none does (a throw rolls back). Services receive one of these for each
 * change that takes more than one statement; repositories themselves never open transactions.
 */
export type InTransaction<R> = <T>(work: (repositories: R) => Promise<T>) => Promise<T>;

/**
 * What a repository bound to a transaction may ask to run once it commits (never after a
 * rollback): telling a background loop that work it recorded is now visible to it.
 */
export interface CommitHooks {
  afterCommit(hook: () => void): void;
}

/** Outside a transaction every statement commits on its own: a hook runs at once. */
export const AUTOCOMMIT: CommitHooks = { afterCommit: (hook) => hook() };

export function inTransaction<R>(
  db: Kysely<Tables>,
  bind: (trx: Kysely<Tables>, commit: CommitHooks) => R,
): InTransaction<R> {
  return async (work) => {
    const hooks: Array<() => void> = [];
    const commit: CommitHooks = { afterCommit: (hook) => void hooks.push(hook) };
    const result = await db.transaction().execute((trx) => work(bind(trx, commit)));
    for (const hook of hooks) hook();
    return result;
  };
}
