import { type Kysely, type Selectable, sql } from 'kysely';
import { paged } from '../db/paging.ts';
import { countedTotal, pageInIdOrder, type RangeCounts } from '../db/range-pages.ts';
import {
  type CreationKind,
  PRODUCT_COUNT_SPAN,
  type ProductsTable,
  type ReviewsTable,
  type Tables,
} from '../db/schema.ts';
import type { PageRequest } from '../shared/paging.ts';
import type { Product, ProductSortKey, Review, ReviewSortKey } from './model.ts';

const PRODUCT_COLUMNS = [
  'id',
  'name',
  'description',
  'price',
  'owner_id',
  'created_at',
  'updated_at',
] as const;
const REVIEW_COLUMNS = ['id', 'product_id', 'author_id', 'rating', 'text', 'written_at'] as const;

const PRODUCT_SORT = { id: 'id', name: 'name', price: 'price', createdAt: 'created_at' } as const;
const REVIEW_SORT = { id: 'id', time: 'written_at', rating: 'rating' } as const;
const PRODUCT_COUNTS: RangeCounts = { table: 'product_counts', column: 'products', span: PRODUCT_COUNT_SPAN };

type ProductRow = Pick<Selectable<ProductsTable>, (typeof PRODUCT_COLUMNS)[number]>;
type ReviewRow = Pick<Selectable<ReviewsTable>, (typeof REVIEW_COLUMNS)[number]>;

const toProduct = (r: ProductRow): Product => ({
  id: r.id,
  name: r.name,
  description: r.description,
  // Stored as int8; the API bounds it to 2^53-1, so it is a safe number.
  price: Number(r.price),
  ownerId: r.owner_id,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const toReview = (r: ReviewRow): Review => ({
  id: r.id,
  productId: r.product_id,
  authorId: r.author_id,
  rating: r.rating,
  text: r.text,
  time: r.written_at,
});

export interface ProductFields {
  name: string;
  description: string;
  price: number;
}

export interface ReviewFields {
  rating: number;
  text: string;
}

/** A creation admitted by the rate (with how many of that kind the user owns), or refused until later. */
export type CreationSlot = { admitted: true; owned: number } | { admitted: false; retryAfterMs: number };

export interface CatalogRepositoryOptions {
  postgres: boolean;
}

export class CatalogRepository {
  readonly #db: Kysely<Tables>;
  readonly #options: CatalogRepositoryOptions;
  constructor(db: Kysely<Tables>, options: CatalogRepositoryOptions) {
    this.#db = db;
    this.#options = options;
  }

  /**
   * Takes one creation of `kind` from the user's allowance of `perMinute`: that many at once, then
   * one every 60 s / perMinute (a virtual-scheduling limiter in one row, exact on one instance or
   * several). In a transaction, the row stays locked until it ends (PostgreSQL; SQLite has one
   * writer), so `owned` cannot change under the caller before it inserts, and a rollback gives the
   * creation back. A refusal changes nothing.
   */
  async admitCreation(
    userId: bigint,
    kind: CreationKind,
    now: number,
    perMinute: number,
  ): Promise<CreationSlot> {
    const interval = Math.ceil(60_000 / perMinute);
    const greatest = this.#options.postgres ? sql`greatest` : sql`max`;
    const paced = sql<bigint>`${greatest}(creation_limits.paced_until, ${BigInt(now)}) + ${BigInt(interval)}`;
    const row = await this.#db
      .insertInto('creation_limits')
      .values({ user_id: userId, kind, owned: 0n, paced_until: BigInt(now + interval) })
      .onConflict((oc) =>
        oc
          .columns(['user_id', 'kind'])
          .doUpdateSet({ paced_until: paced })
          .where(sql<boolean>`${paced} <= ${BigInt(now + perMinute * interval)}`),
      )
      .returning('owned')
      .executeTakeFirst();
    if (row) return { admitted: true, owned: Number(row.owned) };
    const { paced_until } = await this.#db
      .selectFrom('creation_limits')
      .select('paced_until')
      .where('user_id', '=', userId)
      .where('kind', '=', kind)
      .executeTakeFirstOrThrow();
    return { admitted: false, retryAfterMs: Number(paced_until) + interval - perMinute * interval - now };
  }

  async findProduct(id: bigint): Promise<Product | undefined> {
    const row = await this.#db
      .selectFrom('products')
      .select(PRODUCT_COLUMNS)
      .where('id', '=', id)
      .executeTakeFirst();
    return row && toProduct(row);
  }

  /** One page in an order other than id: a walk of its (key, id) index (the service bounds its depth). */
  async listProducts(paging: PageRequest<ProductSortKey>): Promise<Product[]> {
    const query = this.#db.selectFrom('products').select(PRODUCT_COLUMNS);
    return (await paged(query, paging, PRODUCT_SORT[paging.sort]).execute()).map(toProduct);
  }

  /** One page in id order and the total, both from the per-range counts, at any depth. */
  async listProductsInIdOrder(
    paging: PageRequest<ProductSortKey>,
  ): Promise<{ items: Product[]; total: number }> {
    const query = this.#db.selectFrom('products').select(PRODUCT_COLUMNS);
    const { rows, total } = await pageInIdOrder(this.#db, PRODUCT_COUNTS, query, paging);
    return { items: rows.map(toProduct), total };
  }

  /** The number of products, from the per-range counts rather than a scan of the table. */
  countProducts(): Promise<number> {
    return countedTotal(this.#db, PRODUCT_COUNTS);
  }

  async insertProduct(ownerId: bigint, fields: ProductFields): Promise<Product> {
    const now = new Date().toISOString();
    const row = await this.#db
      .insertInto('products')
      .values({ ...fields, owner_id: ownerId, created_at: now, updated_at: now })
      .returning(PRODUCT_COLUMNS)
      .executeTakeFirstOrThrow();
    return toProduct(row);
  }

  /** Replaces the writable fields if `ownerId` still owns the product; undefined otherwise. */
  async updateProduct(id: bigint, ownerId: bigint, fields: ProductFields): Promise<Product | undefined> {
    const row = await this.#db
      .updateTable('products')
      .set({ ...fields, updated_at: new Date().toISOString() })
      .where('id', '=', id)
      .where('owner_id', '=', ownerId)
      .returning(PRODUCT_COLUMNS)
      .executeTakeFirst();
    return row && toProduct(row);
  }

  /** Deletes the product (and, by cascade, its reviews) if `ownerId` owns it. */
  async deleteProduct(id: bigint, ownerId: bigint): Promise<boolean> {
    const result = await this.#db
      .deleteFrom('products')
      .where('id', '=', id)
      .where('owner_id', '=', ownerId)
      .executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  async findReview(productId: bigint, reviewId: bigint): Promise<Review | undefined> {
    const row = await this.#db
      .selectFrom('reviews')
      .select(REVIEW_COLUMNS)
      .where('id', '=', reviewId)
      .where('product_id', '=', productId)
      .executeTakeFirst();
    return row && toReview(row);
  }

  async listReviews(productId: bigint, paging: PageRequest<ReviewSortKey>): Promise<Review[]> {
    const query = this.#db.selectFrom('reviews').select(REVIEW_COLUMNS).where('product_id', '=', productId);
    const rows = await paged(query, paging, REVIEW_SORT[paging.sort]).execute();
    return rows.map(toReview);
  }

  /** The product's number of reviews, as the triggers keep it (no row: none). */
  async countReviews(productId: bigint): Promise<number> {
    const row = await this.#db
      .selectFrom('review_counts')
      .select('reviews')
      .where('product_id', '=', productId)
      .executeTakeFirst();
    return Number(row?.reviews ?? 0);
  }

  async insertReview(
    productId: bigint,
    authorId: bigint,
    fields: ReviewFields,
    at = new Date(),
  ): Promise<Review> {
    const row = await this.#db
      .insertInto('reviews')
      .values({
        ...fields,
        product_id: productId,
        author_id: authorId,
        written_at: at.toISOString(),
        updated_at: at.toISOString(),
      })
      .returning(REVIEW_COLUMNS)
      .executeTakeFirstOrThrow();
    return toReview(row);
  }

  async updateReview(productId: bigint, reviewId: bigint, authorId: bigint, fields: ReviewFields) {
    const row = await this.#db
      .updateTable('reviews')
      .set({ ...fields, updated_at: new Date().toISOString() })
      .where('id', '=', reviewId)
      .where('product_id', '=', productId)
      .where('author_id', '=', authorId)
      .returning(REVIEW_COLUMNS)
      .executeTakeFirst();
    return row && toReview(row);
  }

  async deleteReview(productId: bigint, reviewId: bigint, authorId: bigint): Promise<boolean> {
    const result = await this.#db
      .deleteFrom('reviews')
      .where('id', '=', reviewId)
      .where('product_id', '=', productId)
      .where('author_id', '=', authorId)
      .executeTakeFirst();
    return result.numDeletedRows > 0n;
  }
}
