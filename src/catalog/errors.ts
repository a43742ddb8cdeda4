// The catalog's code: an owner's products and reviews are counted. shared/errors.ts says how codes
// are declared.
import type { Declares, ErrorDeclarations } from '../shared/errors.ts';

export const CATALOG_ERRORS = {
  QUOTA_EXCEEDED: {
    status: 409,
    when: 'You own as many products (or reviews) as one account may (PRODUCTS_MAX_PER_USER, REVIEWS_MAX_PER_USER); delete some to create more.',
  },
} as const satisfies ErrorDeclarations;

declare module '../shared/errors.ts' {
  interface ErrorCodes extends Declares<typeof CATALOG_ERRORS, 'catalog'> {}
}
