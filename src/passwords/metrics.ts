// The passwords feature's metric on GET /metrics (plugins/metrics.ts): the time of each hash.
import { Histogram } from 'prom-client';
import type { MetricFamilies } from '../plugins/metrics.ts';

/** Observes each argon2id run the hasher reports (hashing or verifying, queueing excluded). */
export const passwordMetrics: MetricFamilies = (registry) => {
  const hashes = new Histogram({
    name: 'usher_password_hash_seconds',
    help: 'Time of one argon2id hash (hashing or verifying), queueing excluded.',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  return { hashSeconds: (seconds) => hashes.observe(seconds) };
};
