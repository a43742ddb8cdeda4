// The passwords feature's metrics on GET /metrics (plugins/metrics.ts): the time of each hash, and
// the hash queue: how many wait in each lane, and how long each waited for a slot.
import { Gauge, Histogram, type Registry } from 'prom-client';
import { HASH_LANES } from '../plugins/metrics.ts';
import type { HashLane, HashTimer, QueueTimer } from './hasher.ts';

/** What the hasher tells the metrics. */
export interface PasswordObservers {
  /** The seconds of one argon2id run. */
  hashSeconds: HashTimer;
  /** The seconds a hash waited in its lane's queue before a slot took it (0 when one was free). */
  hashWaited: QueueTimer;
}

/**
 * Observes each argon2id run the hasher reports (hashing or verifying, queueing excluded) and each
 * hash's wait in its lane's queue; `waiting` is read at each scrape.
 */
export function passwordMetrics(registry: Registry, waiting: (lane: HashLane) => number): PasswordObservers {
  const hashes = new Histogram({
    name: 'usher_password_hash_seconds',
    help: 'Time of one argon2id hash (hashing or verifying), queueing excluded.',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  new Gauge({
    name: 'usher_password_hash_queue_depth',
    help: 'Hashes waiting for a slot, by lane: signin (checking a password at sign-in) or account (the rest).',
    labelNames: ['lane'],
    registers: [registry],
    collect() {
      for (const lane of HASH_LANES) this.set({ lane }, waiting(lane));
    },
  });
  const waits = new Histogram({
    name: 'usher_password_hash_queue_wait_seconds',
    help: 'Time a hash waited in its lane’s queue for a slot, by lane (0 when a slot was free).',
    labelNames: ['lane'],
    // A free slot is 0 s; a full queue is tens of hashes of 50 ms to 1 s each.
    buckets: [0.001, 0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  for (const lane of HASH_LANES) waits.zero({ lane });
  return {
    hashSeconds: (seconds) => hashes.observe(seconds),
    hashWaited: (lane, seconds) => waits.observe({ lane }, seconds),
  };
}
