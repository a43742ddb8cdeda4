import type { FastifyBaseLogger } from 'fastify';
import type { SchemaReadiness } from '../db/schema-readiness.ts';
import type { UsersService } from './service.ts';

/** How often a start that found the database unavailable looks again whether it is migrated. */
const READY_POLL_MS = 1000;
/**
 * Reads that fail (a connection refused or slow to open at start, on a loaded server) are tried
 * again this many times, each after twice the wait of the one before (1 s to 16 s): a start that
 * met a busy database still warns of every set.
 */
const READ_TRIES = 5;

/**
 * One warning line per set of accounts whose emails now share a key (migration 0028, decision
 * 355), once the schema is ready: ids only, no address (logs never hold emails); the admin sees
 * the addresses with `usher users collisions`.
 */
export function reportEmailKeyCollisions(
  users: UsersService,
  schema: SchemaReadiness,
  log: FastifyBaseLogger,
): { stop(): Promise<void> } {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let running: Promise<void> = Promise.resolve();
  let failures = 0;
  const report = async () => {
    for (const set of await users.emailKeyCollisions()) {
      if (stopped) return;
      const keptApart = set.keptApart.map((user) => user.id.toString());
      log.warn(
        { holder: set.holder?.id.toString() ?? null, keptApart },
        'email key collision: these accounts have one email under the normalisation of decision 352; the kept-apart ones keep their old key and cannot sign in by email until an admin resolves it (usher users collisions)',
      );
    }
  };
  const run = () => {
    timer = undefined;
    if (stopped) return;
    if (!schema.ready) {
      timer = setTimeout(run, READY_POLL_MS);
      timer.unref();
      return;
    }
    running = report().catch((err: unknown) => {
      failures += 1;
      const again = failures < READ_TRIES && !stopped;
      log.warn({ err, again }, 'email key collisions could not be read');
      if (!again) return;
      timer = setTimeout(run, READY_POLL_MS * 2 ** (failures - 1));
      timer.unref();
    });
  };
  run();
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
