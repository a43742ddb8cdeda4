import type { ActiveSession } from '../sessions/service.ts';
import { AppError } from '../shared/errors.ts';
import type { PageRequest } from '../shared/paging.ts';
import { checkStorableText } from '../shared/text.ts';
import type { Product, ProductInput, ProductSortKey, Review, ReviewInput, ReviewSortKey } from './model.ts';
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

/**
 * Products anyone may read and any signed-in user may create; only a product's creator may
 * change or delete it. Reviews likewise belong to their author. Ownership is checked, then the
 * write is made conditional on it, so a concurrent change cannot slip between the two.
 */
export class CatalogService {
  readonly #catalog: CatalogRepository;

  constructor(catalog: CatalogRepository) {
    this.#catalog = catalog;
  }

  async product(id: bigint): Promise<Product> {
    const product = await this.#catalog.findProduct(id);
    if (!product) throw productNotFound();
    return product;
  }

  async products(paging: PageRequest<ProductSortKey>): Promise<{ items: Product[]; total: number }> {
    const [items, total] = await Promise.all([
      this.#catalog.listProducts(paging),
      this.#catalog.countProducts(),
    ]);
    return { items, total };
  }

  createProduct(actor: ActiveSession, input: ProductInput): Promise<Product> {
    return this.#catalog.insertProduct(actor.userId, productFields(input));
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
    const [items, total] = await Promise.all([
      this.#catalog.listReviews(product.id, paging),
      this.#catalog.countReviews(product.id),
    ]);
    return { items, total };
  }

  async createReview(actor: ActiveSession, productId: bigint, input: ReviewInput): Promise<Review> {
    const text = checkStorableText('text', input.text ?? '');
    const product = await this.product(productId);
    try {
      return await this.#catalog.insertReview(product.id, actor.userId, { rating: input.rating, text });
    } catch (error) {
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
