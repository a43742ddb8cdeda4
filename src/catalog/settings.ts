// The catalog's creation limits (decision 152), read by config.ts (the only reader of the
// environment).
import { type Env, integer } from '../kernel/settings.ts';

export interface CreationLimits {
  /** How many one user may own at once; a creation beyond it is 409 QUOTA_EXCEEDED. */
  perUser: number;
  /** How many one user may create in a minute (at once, then one every 60 s / perMinute); then 429. */
  perMinute: number;
}

/** Per user: how many products and reviews they may own, and create per minute. */
export interface CatalogSettings {
  products: CreationLimits;
  reviews: CreationLimits;
}

export function catalogSettings(env: Env): CatalogSettings {
  return {
    products: {
      perUser: integer(env, 'PRODUCTS_MAX_PER_USER', 1000, 1, 1_000_000),
      perMinute: integer(env, 'PRODUCTS_MAX_PER_MINUTE', 30, 1, 60_000),
    },
    reviews: {
      perUser: integer(env, 'REVIEWS_MAX_PER_USER', 1000, 1, 1_000_000),
      perMinute: integer(env, 'REVIEWS_MAX_PER_MINUTE', 30, 1, 60_000),
    },
  };
}
