import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { pagingQuery, setPageHeaders } from '../plugins/paging.ts';
import { currentSession } from '../sessions/guard.ts';
import { ID_PATTERN, requireId } from '../shared/ids.ts';
import { pageRequest } from '../shared/paging.ts';
import { BODY_ERRORS, errorBody, Id, SERVER_ERRORS } from '../shared/schemas.ts';
import { PRODUCT_SORT_KEYS, type Product, REVIEW_SORT_KEYS, type Review } from './model.ts';
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

const ProductSchema = Type.Object(
  {
    id: Id,
    name: Type.String(),
    description: Type.String(),
    price: Type.Integer({ description: 'In minor currency units (cents).' }),
    ownerId: Id,
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);

const ReviewSchema = Type.Object(
  {
    id: Id,
    productId: Id,
    authorId: Id,
    rating: Type.Integer({ minimum: 1, maximum: 5 }),
    text: Type.String(),
    time: Type.String({ format: 'date-time', description: 'When the review was written.' }),
  },
  { additionalProperties: false },
);

const ProductBody = Type.Object(
  {
    name: Type.String({ description: `1 to ${PRODUCT_NAME_MAX} characters after trimming` }),
    description: Type.Optional(
      Type.String({ maxLength: TEXT_MAX, description: `at most ${TEXT_MAX} characters` }),
    ),
    price: Type.Integer({
      minimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      description: 'a whole number of minor currency units, 0 or more',
    }),
  },
  { additionalProperties: false },
);

const ReviewBody = Type.Object(
  {
    rating: Type.Integer({ minimum: 1, maximum: 5, description: 'a whole number from 1 to 5' }),
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

const WRITE_ERRORS = ['UNAUTHENTICATED', 'FORBIDDEN', ...SERVER_ERRORS] as const;

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
        querystring: pagingQuery(PRODUCT_SORT_KEYS),
        response: { 200: Type.Array(ProductSchema), default: errorBody('INVALID_QUERY', ...SERVER_ERRORS) },
      },
    },
    async (request, reply) => {
      const paging = pageRequest(request.query, 'id' as const);
      const { items, total } = await catalog.products(paging);
      setPageHeaders(request, reply, paging, total);
      return items.map(productBody);
    },
  );

  app.post(
    '/api/products',
    {
      schema: {
        summary: 'Create a product',
        body: ProductBody,
        response: { 201: ProductSchema, default: errorBody(...WRITE_ERRORS, ...BODY_ERRORS) },
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
        params: ProductParams,
        response: { 200: ProductSchema, default: errorBody('NOT_FOUND', ...SERVER_ERRORS) },
      },
    },
    async (request) => productBody(await catalog.product(productId(request.params.id))),
  );

  app.put(
    '/api/products/:id',
    {
      schema: {
        summary: "Replace a product's name, description and price (its creator only)",
        params: ProductParams,
        body: ProductBody,
        response: { 200: ProductSchema, default: errorBody(...WRITE_ERRORS, 'NOT_FOUND', ...BODY_ERRORS) },
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
        params: ProductParams,
        response: { 204: Type.Null(), default: errorBody(...WRITE_ERRORS, 'NOT_FOUND') },
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
        params: ProductParams,
        querystring: pagingQuery(REVIEW_SORT_KEYS),
        response: {
          200: Type.Array(ReviewSchema),
          default: errorBody('NOT_FOUND', 'INVALID_QUERY', ...SERVER_ERRORS),
        },
      },
    },
    async (request, reply) => {
      const paging = pageRequest(request.query, 'id' as const);
      const { items, total } = await catalog.reviews(productId(request.params.id), paging);
      setPageHeaders(request, reply, paging, total);
      return items.map(reviewBody);
    },
  );

  app.post(
    '/api/products/:id/reviews',
    {
      schema: {
        summary: 'Review a product',
        params: ProductParams,
        body: ReviewBody,
        response: { 201: ReviewSchema, default: errorBody(...WRITE_ERRORS, 'NOT_FOUND', ...BODY_ERRORS) },
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
        params: ReviewParams,
        response: { 200: ReviewSchema, default: errorBody('NOT_FOUND', ...SERVER_ERRORS) },
      },
    },
    async (request) =>
      reviewBody(await catalog.review(productId(request.params.id), reviewId(request.params.reviewId))),
  );

  app.put(
    '/api/products/:id/reviews/:reviewId',
    {
      schema: {
        summary: "Replace a review's rating and text (its author only)",
        params: ReviewParams,
        body: ReviewBody,
        response: { 200: ReviewSchema, default: errorBody(...WRITE_ERRORS, 'NOT_FOUND', ...BODY_ERRORS) },
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
        params: ReviewParams,
        response: { 204: Type.Null(), default: errorBody(...WRITE_ERRORS, 'NOT_FOUND') },
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
