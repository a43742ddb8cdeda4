// How the housekeeping purges what has expired (decision 344): a repository deletes at most a batch
// per statement, on the expiry's index, and this calls it again while batches come back full, up to
// a number of rounds per run. Each statement is short (SQLite's one writer waits for no long
// delete; a PostgreSQL autocommit holds no huge transaction) and each run bounded: what a flood
// left over waits for the next run.

/** Rows per statement and statements per run, where a purge has no reason to differ. */
export const PURGE_BATCH = 5000;
export const PURGE_ROUNDS = 20;

/**
 * Calls `deleteBatch(batchSize)` (one statement deleting at most that many rows; it resolves how
 * many went) until one removes fewer than a batch, or `maxRounds` have run. Resolves the total.
 */
export async function purgeInRounds(
  deleteBatch: (limit: number) => Promise<number>,
  batchSize: number = PURGE_BATCH,
  maxRounds: number = PURGE_ROUNDS,
): Promise<number> {
  let total = 0;
  for (let round = 0; round < maxRounds; round++) {
    const n = await deleteBatch(batchSize);
    total += n;
    if (n < batchSize) break;
  }
  return total;
}
