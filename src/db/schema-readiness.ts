import type { FastifyBaseLogger } from 'fastify';
import type { Database, MigrationSet } from './database.ts';
import { isDatabaseUnavailable } from './errors.ts';

export interface SchemaReadiness {
  /** True once migrations have been applied; until then, database routes answer 503. */
  readonly ready: boolean;
  stop(): void;
}

const RETRY_MIN_MS = 250;
const RETRY_MAX_MS = 5000;

/**
 * Applies migrations now if the database answers. If it does not, the process still starts (so a
 * fleet can come up before its database) and retries in the background with capped backoff.
 * Any other migration failure is a real error and is thrown.
 */
export async function migrateOnStart(
  database: Database,
  migrations: MigrationSet,
  log: FastifyBaseLogger,
): Promise<SchemaReadiness> {
  let ready = false;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  try {
    await database.migrate(migrations);
    ready = true;
  } catch (error) {
    if (!isDatabaseUnavailable(error) && !isDatabaseUnavailable((error as Error).cause)) throw error;
    log.warn({ err: error }, 'database unavailable at start; serving 503 and retrying migrations');
    let delay = RETRY_MIN_MS;
    const retry = () => {
      timer = undefined;
      database.migrate(migrations).then(
        () => {
          ready = true;
          log.info('database reachable; migrations applied');
        },
        (err: unknown) => {
          if (stopped) return;
          log.warn({ err }, 'migrations still waiting for the database');
          delay = Math.min(delay * 2, RETRY_MAX_MS);
          timer = setTimeout(retry, delay);
        },
      );
    };
    timer = setTimeout(retry, delay);
  }
  return {
    get ready() {
      return ready;
    },
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
