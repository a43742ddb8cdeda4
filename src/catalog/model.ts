export interface Product {
  readonly id: bigint;
  readonly name: string;
  readonly description: string;
  /** In minor currency units (cents). */
  readonly price: number;
  readonly ownerId: bigint;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

export interface Review {
  readonly id: bigint;
  readonly productId: bigint;
  readonly authorId: bigint;
  readonly rating: number;
  readonly text: string;
  /** When it was written. */
  readonly time: Date;
}

export interface ProductInput {
  name: string;
  description?: string;
  price: number;
}

export interface ReviewInput {
  rating: number;
  text?: string;
}

export const PRODUCT_SORT_KEYS = ['id', 'name', 'price', 'createdAt'] as const;
export type ProductSortKey = (typeof PRODUCT_SORT_KEYS)[number];
/** Orders whose pages are found through product_counts at any depth; the others stop at MAX_PAGE_DEPTH. */
export const PRODUCT_DEEP_SORTS: readonly ProductSortKey[] = ['id'];

export const REVIEW_SORT_KEYS = ['id', 'time', 'rating'] as const;
export type ReviewSortKey = (typeof REVIEW_SORT_KEYS)[number];
/** Every order of a product's reviews skips rows to reach a page, so each stops at MAX_PAGE_DEPTH. */
export const REVIEW_DEEP_SORTS: readonly ReviewSortKey[] = [];
