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

export const REVIEW_SORT_KEYS = ['id', 'time', 'rating'] as const;
export type ReviewSortKey = (typeof REVIEW_SORT_KEYS)[number];
