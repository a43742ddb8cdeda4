import type { CreationLimits } from '../config.ts';
import type { CreationKind } from '../db/schema.ts';
import type { InTransaction } from '../db/transactions.ts';
import type { ActiveSession } from '../sessions/service.ts';
import { AppError } from '../shared/errors.ts';
import { type PageRequest, readPage } from '../shared/paging.ts';
import { checkStorableText } from '../shared/text.ts';
import {
  PRODUCT_DEEP_SORTS,
  type Product,
  type ProductInput,
  type ProductSortKey,
  REVIEW_DEEP_SORTS,
  type Review,
  type ReviewInput,
  type ReviewSortKey,
} from './model.ts';
import type { CatalogRepository, ProductFields } from './repository.ts';

export const PRODUCT_NAME_MAX = 200;
export const TEXT_MAX = 5000;

export const productNotFound = () => new AppError('NOT_FOUND', 'No product has that id.');
export const reviewNotFound = () => new AppError('NOT_FOUND', 'No review with that id on this product.');
const notYours = (what: string) => new AppError('FORBIDDEN', `Only the ${what} may change or delete it.`);

function productFields(input: ProductInput): ProductFields {
  const name = checkStorableText('name', input.name).trim();
  const length = [...name].length;
  if (length < 1 || length > PRODUCT_NAME_MAX) {
    throw new AppError(
      'VALIDATION_FAILED',
      `name: must be 1 to ${PRODUCT_NAME_MAX} characters after trimming`,
    );
  }
  return { name, description: checkStorableText('description', input.description ?? ''), price: input.price };
}

const PLURAL: Record<CreationKind, string> = { product: 'products', review: 'reviews' };

/**
 * Products anyone may read and any signed-in user may create; only a product's creator may
 * change or delete it. Reviews likewise belong to their author. Ownership is checked, then the
 * write is made conditional on it, so a concurrent change cannot slip between the two. Each user
 * may own and create per minute only so many of each (`limits`), counted in the shared database.
 */
export class CatalogService {
  readonly #catalog: CatalogRepository;
  readonly #transaction: InTransaction<{ catalog: CatalogRepository }>;
  readonly #limits: Record<CreationKind, CreationLimits>;
  readonly #now: () => number;

  constructor(deps: {
    catalog: CatalogRepository;
    transaction: InTransaction<{ catalog: CatalogRepository }>;
    limits: { products: CreationLimits; reviews: CreationLimits };
    now?: () => number;
  }) {
    this.#catalog = deps.catalog;
    this.#transaction = deps.transaction;
    this.#limits = { product: deps.limits.products, review: deps.limits.reviews };
    this.#now = deps.now ?? Date.now;
  }

  /**
   * Inserts what `insert` makes, if the user's rate and quota of `kind` allow it: in one
   * transaction, whose first write locks the user's row of that kind, so a user's simultaneous
   * creations are counted one after the other and a refused one leaves nothing behind.
   */
  #create<T>(userId: bigint, kind: CreationKind, insert: (catalog: CatalogRepository) => Promise<T>) {
    const limits = this.#limits[kind];
    return this.#transaction(async ({ catalog }) => {
      const slot = await catalog.admitCreation(userId, kind, this.#now(), limits.perMinute);
      if (!slot.admitted) {
        const seconds = Math.max(1, Math.ceil(slot.retryAfterMs / 1000));
        throw new AppError(
          'TOO_MANY_REQUESTS',
          `You may create ${limits.perMinute} ${PLURAL[kind]} a minute; try again in ${seconds} s.`,
          429,
          { 'retry-after': String(seconds) },
        );
      }
      if (slot.owned >= limits.perUser) {
        throw new AppError(
          'QUOTA_EXCEEDED',
          `You have ${slot.owned} ${PLURAL[kind]}, the most one account may have; delete some to create more.`,
        );
      }
      return insert(catalog);
    });
  }

  async product(id: bigint): Promise<Product> {
    const product = await this.#catalog.findProduct(id);
    if (!product) throw productNotFound();
    return product;
  }

  products(paging: PageRequest<ProductSortKey>): Promise<{ items: Product[]; total: number }> {
    const catalog = this.#catalog;
    if (PRODUCT_DEEP_SORTS.includes(paging.sort)) return catalog.listProductsInIdOrder(paging);
    return readPage(paging, PRODUCT_DEEP_SORTS, catalog.countProducts(), () => catalog.listProducts(paging));
  }

  createProduct(actor: ActiveSession, input: ProductInput): Promise<Product> {
    const fields = productFields(input);
    return this.#create(actor.userId, 'product', (catalog) => catalog.insertProduct(actor.userId, fields));
  }

  async replaceProduct(actor: ActiveSession, id: bigint, input: ProductInput): Promise<Product> {
    const fields = productFields(input);
    const existing = await this.product(id);
    if (existing.ownerId !== actor.userId) throw notYours("product's creator");
    const updated = await this.#catalog.updateProduct(existing.id, actor.userId, fields);
    if (!updated) throw productNotFound();
    return updated;
  }

  async deleteProduct(actor: ActiveSession, id: bigint): Promise<void> {
    const existing = await this.product(id);
    if (existing.ownerId !== actor.userId) throw notYours("product's creator");
    if (!(await this.#catalog.deleteProduct(existing.id, actor.userId))) throw productNotFound();
  }

  async review(productId: bigint, reviewId: bigint): Promise<Review> {
    const product = await this.product(productId);
    const review = await this.#catalog.findReview(product.id, reviewId);
    if (!review) throw reviewNotFound();
    return review;
  }

  async reviews(
    productId: bigint,
    paging: PageRequest<ReviewSortKey>,
  ): Promise<{ items: Review[]; total: number }> {
    const product = await this.product(productId);
    const catalog = this.#catalog;
    return readPage(paging, REVIEW_DEEP_SORTS, catalog.countReviews(product.id), () =>
      catalog.listReviews(product.id, paging),
    );
  }

  async createReview(actor: ActiveSession, productId: bigint, input: ReviewInput): Promise<Review> {
    const text = checkStorableText('text', input.text ?? '');
    const product = await this.product(productId);
    try {
      return await this.#create(actor.userId, 'review', (catalog) =>
        catalog.insertReview(product.id, actor.userId, { rating: input.rating, text }),
      );
    } catch (error) {
      if (error instanceof AppError) throw error;
      // The product was deleted between the check and the insert (foreign key refused the row).
      if (!(await this.#catalog.findProduct(product.id))) throw productNotFound();
      throw error;
    }
  }

  async replaceReview(
    actor: ActiveSession,
    productId: bigint,
    reviewId: bigint,
    input: ReviewInput,
  ): Promise<Review> {
    const existing = await this.review(productId, reviewId);
    if (existing.authorId !== actor.userId) throw notYours("review's author");
    const updated = await this.#catalog.updateReview(existing.productId, existing.id, actor.userId, {
      rating: input.rating,
      text: checkStorableText('text', input.text ?? ''),
    });
    if (!updated) throw reviewNotFound();
    return updated;
  }

  async deleteReview(actor: ActiveSession, productId: bigint, reviewId: bigint): Promise<void> {
    const existing = await this.review(productId, reviewId);
    if (existing.authorId !== actor.userId) throw notYours("review's author");
    if (!(await this.#catalog.deleteReview(existing.productId, existing.id, actor.userId)))
      throw reviewNotFound();
  }
}
