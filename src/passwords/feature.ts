import type { Feature } from '../features.ts';
import { passwordMetrics } from './metrics.ts';

/** Password hashing and rules; its metric is the time of each hash. */
export const passwordsFeature: Feature = {
  name: 'passwords',
  metrics: (registry) => passwordMetrics(registry),
};
