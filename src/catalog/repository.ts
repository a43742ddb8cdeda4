import type { Kysely, Selectable } from 'kysely';
import { paged } from '../db/paging.ts';
import type { ProductsTable, ReviewsTable, Tables } from '../db/schema.ts';
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

export class CatalogRepository {
  readonly #db: Kysely<Tables>;
  constructor(db: Kysely<Tables>) {
    this.#db = db;
  }

  async findProduct(id: bigint): Promise<Product | undefined> {
    const row = await this.#db
      .selectFrom('products')
      .select(PRODUCT_COLUMNS)
      .where('id', '=', id)
      .executeTakeFirst();
    return row && toProduct(row);
  }

  async listProducts(paging: PageRequest<ProductSortKey>): Promise<Product[]> {
    const query = this.#db.selectFrom('products').select(PRODUCT_COLUMNS);
    const rows = await paged(query, paging, PRODUCT_SORT[paging.sort]).execute();
    return rows.map(toProduct);
  }

  async countProducts(): Promise<number> {
    const row = await this.#db
      .selectFrom('products')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
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

  async countReviews(productId: bigint): Promise<number> {
    const row = await this.#db
      .selectFrom('reviews')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('product_id', '=', productId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
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
