import type { Feature } from '../features.ts';
import { passwordMetrics } from './metrics.ts';
import { createPasswordCredentials } from './migrations/2026-11-25-0013-password-credentials.ts';

/** Password hashing and rules, the accounts' passwords (their table), and the time of each hash. */
export const passwordsFeature: Feature = {
  name: 'passwords',
  migrations: { '2026-11-25-0013-password-credentials': createPasswordCredentials },
  metrics: (registry, services) => passwordMetrics(registry, (lane) => services().hasher.waiting(lane)),
};
