import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { pageOf, pagingQuery, setPageHeaders } from '../plugins/paging.ts';
import { currentSession } from '../sessions/index.ts';
import { BODY_LIMITS } from '../shared/body-limits.ts';
import { ID_PATTERN, requireId } from '../shared/ids.ts';
import { MAX_PAGE_DEPTH, pageRequest } from '../shared/paging.ts';
import {
  BODY_ERRORS,
  component,
  type Failing,
  failures,
  Id,
  noContent,
  success,
  Timestamp,
} from '../shared/schemas.ts';
import {
  PRODUCT_DEEP_SORTS,
  PRODUCT_SORT_KEYS,
  type Product,
  REVIEW_DEEP_SORTS,
  REVIEW_SORT_KEYS,
  type Review,
} from './model.ts';
import {
  type CatalogService,
  PRODUCT_NAME_MAX,
  productNotFound,
  reviewNotFound,
  TEXT_MAX,
} from './service.ts';

const productId = (raw: string) => requireId(raw, productNotFound);
const reviewId = (raw: string) => requireId(raw, reviewNotFound);

const idParam = (what: string) => Type.String({ pattern: ID_PATTERN, description: `${what} id` });
const ProductParams = Type.Object({ id: idParam('Product') });
const ReviewParams = Type.Object({ id: idParam('Product'), reviewId: idParam('Review') });

const Price = (description: string) =>
  Type.Integer({ format: 'int64', minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description });
const Rating = (description: string) =>
  Type.Integer({ format: 'int32', minimum: 1, maximum: 5, description });

export const ProductComponent = component(
  'Product',
  Type.Object(
    {
      id: Id,
      name: Type.String({ maxLength: PRODUCT_NAME_MAX }),
      description: Type.String({ maxLength: TEXT_MAX }),
      price: Price('In minor currency units (cents).'),
      ownerId: Id,
      createdAt: Timestamp(),
      updatedAt: Timestamp(),
    },
    { additionalProperties: false, description: 'A product; its creator (`ownerId`) alone may change it.' },
  ),
);
const ProductSchema = ProductComponent.ref;

export const ReviewComponent = component(
  'Review',
  Type.Object(
    {
      id: Id,
      productId: Id,
      authorId: Id,
      rating: Rating('From 1 to 5.'),
      text: Type.String({ maxLength: TEXT_MAX }),
      time: Timestamp('When the review was written.'),
    },
    { additionalProperties: false, description: 'A review of a product; its author alone may change it.' },
  ),
);
const ReviewSchema = ReviewComponent.ref;

const ProductBody = Type.Object(
  {
    name: Type.String({
      maxLength: PRODUCT_NAME_MAX,
      description: `1 to ${PRODUCT_NAME_MAX} characters after trimming`,
    }),
    description: Type.Optional(
      Type.String({ maxLength: TEXT_MAX, description: `at most ${TEXT_MAX} characters` }),
    ),
    price: Price('a whole number of minor currency units, 0 or more'),
  },
  { additionalProperties: false },
);

const ReviewBody = Type.Object(
  {
    rating: Rating('a whole number from 1 to 5'),
    text: Type.Optional(Type.String({ maxLength: TEXT_MAX, description: `at most ${TEXT_MAX} characters` })),
  },
  { additionalProperties: false },
);

const productBody = (p: Product) => ({
  id: p.id,
  name: p.name,
  description: p.description,
  price: p.price,
  ownerId: p.ownerId,
  createdAt: p.createdAt.toISOString(),
  updatedAt: p.updatedAt.toISOString(),
});

const reviewBody = (r: Review) => ({
  id: r.id,
  productId: r.productId,
  authorId: r.authorId,
  rating: r.rating,
  text: r.text,
  time: r.time.toISOString(),
});

const WRITE_ERRORS = ['UNAUTHENTICATED', 'FORBIDDEN'] as const;
const NOTES = {
  product: { NOT_FOUND: 'No product has that id.' },
  review: { NOT_FOUND: 'No product has that id, or it has no review with that id.' },
  owner: {
    NOT_FOUND: 'No product has that id.',
    FORBIDDEN: 'You did not create this product, or the session cookie was sent cross-site.',
  },
  author: {
    NOT_FOUND: 'No product has that id, or it has no review with that id.',
    FORBIDDEN: 'You did not write this review, or the session cookie was sent cross-site.',
  },
} as const;
const fails = (codes: readonly Failing[], notes: keyof typeof NOTES) =>
  failures(codes, { notes: NOTES[notes] });

const DEPTH_NOTE = `page × size may be at most ${MAX_PAGE_DEPTH} in an order that pages no deeper (a page that starts past the end is still an empty array)`;
const pagingFailures = (deep: string) => ({
  INVALID_QUERY: `A page, size or sort value that is not accepted, or ${DEPTH_NOTE}. ${deep}`,
});
const creationNotes = (plural: string, setting: string) => ({
  FORBIDDEN: 'The session cookie was sent cross-site.',
  TOO_MANY_REQUESTS: `You created ${setting}_MAX_PER_MINUTE ${plural} (30 by default) in the last minute: that many at once, then one every 60 s / ${setting}_MAX_PER_MINUTE. Retry-After says when the next one is allowed.`,
  QUOTA_EXCEEDED: `You own ${setting}_MAX_PER_USER ${plural} (1000 by default); delete some to create more.`,
});

const created = (reply: FastifyReply, location: string) => reply.code(201).header('location', location);

/** /api/products and its nested /api/products/{id}/reviews: SPEC 4.2's REST convention. */
export const catalogRoutes: FastifyPluginAsyncTypebox<{ catalog: CatalogService }> = async (
  app,
  { catalog },
) => {
  app.get(
    '/api/products',
    {
      schema: {
        summary: 'List products',
        operationId: 'listProducts',
        description:
          'One page of products, ordered by `sort` (SPEC 4.2 paging). In id order (the default) every page can be read; in the other orders page × size may be at most 10,000, and `Link` stops there.',
        querystring: pagingQuery(PRODUCT_SORT_KEYS),
        response: {
          200: pageOf(ProductSchema, 'A page of products.'),
          ...failures(['INVALID_QUERY'], {
            notes: pagingFailures(
              'Sort the other way to read from the other end, or by id to reach any page.',
            ),
          }),
        },
      },
    },
    async (request, reply) => {
      const paging = pageRequest(request.query, 'id' as const);
      const { items, total } = await catalog.products(paging);
      setPageHeaders(request, reply, paging, total, PRODUCT_DEEP_SORTS);
      return items.map(productBody);
    },
  );

  app.post(
    '/api/products',
    {
      bodyLimit: BODY_LIMITS.text,
      schema: {
        summary: 'Create a product',
        operationId: 'createProduct',
        description:
          'You become its owner: only you may change or delete it. Each account may own and create per minute only so many products (`QUOTA_EXCEEDED`, `TOO_MANY_REQUESTS`).',
        body: ProductBody,
        response: {
          201: success(ProductSchema, 'Created.', 'Location'),
          ...failures([...WRITE_ERRORS, 'QUOTA_EXCEEDED', 'TOO_MANY_REQUESTS', ...BODY_ERRORS], {
            notes: creationNotes('products', 'PRODUCTS'),
          }),
        },
      },
      config: { auth: 'session' },
    },
    async (request, reply) => {
      const session = currentSession(request);
      const product = await catalog.createProduct(session, request.body);
      created(reply, `/api/products/${product.id}`);
      return productBody(product);
    },
  );

  app.get(
    '/api/products/:id',
    {
      schema: {
        summary: 'Get a product',
        operationId: 'getProduct',
        description: 'The product with that id.',
        params: ProductParams,
        response: {
          200: success(ProductSchema, 'The product.'),
          ...fails(['NOT_FOUND'], 'product'),
        },
      },
    },
    async (request) => productBody(await catalog.product(productId(request.params.id))),
  );

  app.put(
    '/api/products/:id',
    {
      bodyLimit: BODY_LIMITS.text,
      schema: {
        summary: "Replace a product's name, description and price (its creator only)",
        operationId: 'replaceProduct',
        description: 'A full replacement: a description left out becomes empty.',
        params: ProductParams,
        body: ProductBody,
        response: {
          200: success(ProductSchema, 'Replaced.'),
          ...fails([...WRITE_ERRORS, 'NOT_FOUND', ...BODY_ERRORS], 'owner'),
        },
      },
      config: { auth: 'session' },
    },
    async (request) => {
      const session = currentSession(request);
      return productBody(await catalog.replaceProduct(session, productId(request.params.id), request.body));
    },
  );

  app.delete(
    '/api/products/:id',
    {
      schema: {
        summary: 'Delete a product and its reviews (its creator only)',
        operationId: 'deleteProduct',
        description: 'Its reviews go with it.',
        params: ProductParams,
        response: { 204: noContent('Deleted.'), ...fails([...WRITE_ERRORS, 'NOT_FOUND'], 'owner') },
      },
      config: { auth: 'session' },
    },
    async (request, reply) => {
      const session = currentSession(request);
      await catalog.deleteProduct(session, productId(request.params.id));
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/api/products/:id/reviews',
    {
      schema: {
        summary: "List a product's reviews",
        operationId: 'listReviews',
        description:
          'One page of the reviews of one product, ordered by `sort` (SPEC 4.2 nested collections). In every order page × size may be at most 10,000, and `Link` stops there.',
        params: ProductParams,
        querystring: pagingQuery(REVIEW_SORT_KEYS),
        response: {
          200: pageOf(ReviewSchema, 'A page of reviews.'),
          ...failures(['NOT_FOUND', 'INVALID_QUERY'], {
            notes: { ...NOTES.product, ...pagingFailures('Sort the other way to read from the other end.') },
          }),
        },
      },
    },
    async (request, reply) => {
      const paging = pageRequest(request.query, 'id' as const);
      const { items, total } = await catalog.reviews(productId(request.params.id), paging);
      setPageHeaders(request, reply, paging, total, REVIEW_DEEP_SORTS);
      return items.map(reviewBody);
    },
  );

  app.post(
    '/api/products/:id/reviews',
    {
      bodyLimit: BODY_LIMITS.text,
      schema: {
        summary: 'Review a product',
        operationId: 'createReview',
        description:
          'You become its author: only you may change or delete it. Each account may own and write per minute only so many reviews (`QUOTA_EXCEEDED`, `TOO_MANY_REQUESTS`).',
        params: ProductParams,
        body: ReviewBody,
        response: {
          201: success(ReviewSchema, 'Created.', 'Location'),
          ...failures([...WRITE_ERRORS, 'NOT_FOUND', 'QUOTA_EXCEEDED', 'TOO_MANY_REQUESTS', ...BODY_ERRORS], {
            notes: { ...NOTES.product, ...creationNotes('reviews', 'REVIEWS') },
          }),
        },
      },
      config: { auth: 'session' },
    },
    async (request, reply) => {
      const session = currentSession(request);
      const review = await catalog.createReview(session, productId(request.params.id), request.body);
      created(reply, `/api/products/${review.productId}/reviews/${review.id}`);
      return reviewBody(review);
    },
  );

  app.get(
    '/api/products/:id/reviews/:reviewId',
    {
      schema: {
        summary: 'Get a review',
        operationId: 'getReview',
        description: 'One review of one product.',
        params: ReviewParams,
        response: {
          200: success(ReviewSchema, 'The review.'),
          ...fails(['NOT_FOUND'], 'review'),
        },
      },
    },
    async (request) =>
      reviewBody(await catalog.review(productId(request.params.id), reviewId(request.params.reviewId))),
  );

  app.put(
    '/api/products/:id/reviews/:reviewId',
    {
      bodyLimit: BODY_LIMITS.text,
      schema: {
        summary: "Replace a review's rating and text (its author only)",
        operationId: 'replaceReview',
        description: 'A full replacement: a text left out becomes empty.',
        params: ReviewParams,
        body: ReviewBody,
        response: {
          200: success(ReviewSchema, 'Replaced.'),
          ...fails([...WRITE_ERRORS, 'NOT_FOUND', ...BODY_ERRORS], 'author'),
        },
      },
      config: { auth: 'session' },
    },
    async (request) => {
      const session = currentSession(request);
      const { id, reviewId: reviewIdRaw } = request.params;
      return reviewBody(
        await catalog.replaceReview(session, productId(id), reviewId(reviewIdRaw), request.body),
      );
    },
  );

  app.delete(
    '/api/products/:id/reviews/:reviewId',
    {
      schema: {
        summary: 'Delete a review (its author only)',
        operationId: 'deleteReview',
        description: 'Removes one of your reviews.',
        params: ReviewParams,
        response: { 204: noContent('Deleted.'), ...fails([...WRITE_ERRORS, 'NOT_FOUND'], 'author') },
      },
      config: { auth: 'session' },
    },
    async (request, reply) => {
      const session = currentSession(request);
      await catalog.deleteReview(session, productId(request.params.id), reviewId(request.params.reviewId));
      return reply.code(204).send(null);
    },
  );
};
