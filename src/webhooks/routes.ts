// Webhooks on the wire (CONTRACT "Administration"), admins only, identical in both profiles.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { pageOf, pagingQuery, setPageHeaders } from '../plugins/paging.ts';
import { currentSession } from '../sessions/index.ts';
import { AppError } from '../shared/errors.ts';
import { parseExact } from '../shared/exact-json.ts';
import { ID_PATTERN, requireId } from '../shared/ids.ts';
import { MAX_PAGE_SIZE, pageRequest } from '../shared/paging.ts';
import { component, failures, Id, noContent, success, Timestamp } from '../shared/schemas.ts';
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from './events.ts';
import type { DeliveryRecord, WebhookRecord } from './repository.ts';
import { DELIVERIES_DEPTH, URL_MAX, type WebhookService } from './service.ts';

const EventType = Type.Unsafe<WebhookEventType>({
  type: 'string',
  enum: [...WEBHOOK_EVENT_TYPES],
  description: 'An account event a webhook may listen to.',
});
const Events = Type.Array(EventType, { minItems: 1, maxItems: WEBHOOK_EVENT_TYPES.length });

const webhookFields = {
  id: Id,
  url: Type.String({ maxLength: URL_MAX }),
  events: Events,
  createdAt: Timestamp(),
};

export const WebhookComponent = component(
  'Webhook',
  Type.Object(webhookFields, { additionalProperties: false, description: 'A receiver of account events.' }),
);

const CreatedWebhook = Type.Object(
  {
    ...webhookFields,
    secret: Type.String({
      pattern: '^whsec_[A-Za-z0-9+/=]{44}$',
      maxLength: 50,
      description:
        'The signing secret, shown this once (`whsec_` + base64 of 32 random bytes): give it to your Standard Webhooks library to verify each delivery.',
    }),
  },
  { additionalProperties: false },
);

export const DeliveryComponent = component(
  'WebhookDelivery',
  Type.Object(
    {
      id: Id,
      messageId: Type.String({
        maxLength: 64,
        description: 'The webhook-id header: the same at every attempt.',
      }),
      type: EventType,
      userId: Id,
      status: Type.Union([Type.Literal('pending'), Type.Literal('sent'), Type.Literal('failed')], {
        description: '`pending`: not delivered yet (retried with backoff); `failed`: given up after 24 h.',
      }),
      attempts: Type.Integer({ minimum: 0, maximum: 100_000, format: 'int32' }),
      createdAt: Timestamp(),
      nextAttemptAt: Type.Union([Timestamp(), Type.Null()], {
        description: 'When a pending one is tried next.',
      }),
      lastAttemptAt: Type.Union([Timestamp(), Type.Null()]),
      lastStatus: Type.Union([Type.Integer({ minimum: 100, maximum: 999, format: 'int32' }), Type.Null()], {
        description: "The receiver's status at the last attempt (null: no answer).",
      }),
      lastError: Type.Union([Type.String({ maxLength: 500 }), Type.Null()], {
        description: 'Why the last attempt failed (the start of the answer, a timeout, a refused address).',
      }),
      sentAt: Type.Union([Timestamp(), Type.Null()]),
      payload: Type.Object(
        {
          type: EventType,
          timestamp: Timestamp(),
          data: Type.Record(Type.String(), Type.Unknown()),
        },
        { additionalProperties: false, description: 'The body POSTed, as it is sent at every attempt.' },
      ),
    },
    { additionalProperties: false, description: 'One event on its way to one receiver.' },
  ),
);

const IdParams = Type.Object({ id: Type.String({ pattern: ID_PATTERN, description: 'Webhook id.' }) });
const DeliveryParams = Type.Object({
  id: Type.String({ pattern: ID_PATTERN, description: 'Webhook id.' }),
  deliveryId: Type.String({ pattern: ID_PATTERN, description: 'Delivery id.' }),
});
const CreateBody = Type.Object(
  {
    url: Type.String({
      maxLength: URL_MAX,
      description:
        'Where deliveries are POSTed: https:// on a public address (http:// and private, loopback or link-local addresses only with WEBHOOK_ALLOW_PRIVATE=true).',
    }),
    events: Events,
  },
  { additionalProperties: false },
);
const DeliveriesQuery = Type.Object(
  {
    page: pagingQuery(['id']).properties.page,
    size: pagingQuery(['id']).properties.size,
    status: Type.Optional(
      Type.Union([Type.Literal('pending'), Type.Literal('sent'), Type.Literal('failed')]),
    ),
  },
  { additionalProperties: true },
);

const view = (webhook: WebhookRecord) => ({
  id: webhook.id,
  url: webhook.url,
  events: webhook.events as WebhookEventType[],
  createdAt: webhook.createdAt.toISOString(),
});

const deliveryView = (d: DeliveryRecord) => ({
  id: d.id,
  messageId: d.messageId,
  type: d.type as WebhookEventType,
  userId: d.userId,
  status: d.status,
  attempts: d.attempts,
  createdAt: d.createdAt.toISOString(),
  nextAttemptAt: d.nextAttemptAt?.toISOString() ?? null,
  lastAttemptAt: d.lastAttemptAt?.toISOString() ?? null,
  lastStatus: d.lastStatus,
  lastError: d.lastError,
  sentAt: d.sentAt?.toISOString() ?? null,
  // Read with its ids as they were written: a JSON integer above 2^53 would otherwise round.
  payload: parseExact<{ type: WebhookEventType; timestamp: string; data: Record<string, unknown> }>(
    d.payload,
  ),
});

const notFound = () => new AppError('NOT_FOUND', 'No webhook has that id.');
const webhookId = (request: FastifyRequest<{ Params: { id: string } }>) =>
  requireId(request.params.id, notFound);
const ADMIN_ONLY = 'Needs an admin.';
const unknown = { NOT_FOUND: 'No webhook has that id.' };

export const webhookRoutes: FastifyPluginAsyncTypebox<{ webhooks: WebhookService }> = async (
  app,
  { webhooks },
) => {
  const config = { auth: 'admin', noStore: true, notFoundCode: 'NOT_FOUND' } as const;

  app.post(
    '/api/admin/webhooks',
    {
      schema: {
        summary: 'Register a webhook',
        operationId: 'adminCreateWebhook',
        description: `${ADMIN_ONLY} From now on each listed event is POSTed to \`url\` as \`{"type", "timestamp", "data"}\`, signed as the Standard Webhooks specification says (webhook-id, webhook-timestamp, webhook-signature), at least once, in order per user, retried with backoff for 24 h. The secret is shown in this answer only. On PostgreSQL secrets are sealed under ENCRYPTION_KEY (unset: 503 UNAVAILABLE).`,
        body: CreateBody,
        response: {
          201: success(CreatedWebhook, 'Registered.', 'Location'),
          ...failures(['VALIDATION_FAILED', 'UNAUTHENTICATED', 'FORBIDDEN', 'UNAVAILABLE']),
        },
      },
      config,
    },
    async (request, reply) => {
      const { webhook, secret } = await webhooks.create(request.body, currentSession(request).userId);
      reply.code(201).header('location', `/api/admin/webhooks/${webhook.id}`);
      return { ...view(webhook), secret };
    },
  );

  app.get(
    '/api/admin/webhooks',
    {
      schema: {
        summary: 'The webhooks',
        operationId: 'adminListWebhooks',
        description: `${ADMIN_ONLY} In id order, with the collection conventions. Secrets are never shown again.`,
        querystring: pagingQuery(['id']),
        response: {
          200: pageOf(WebhookComponent.ref, 'A page of webhooks.'),
          ...failures(['INVALID_QUERY', 'UNAUTHENTICATED', 'FORBIDDEN']),
        },
      },
      config,
    },
    async (request, reply) => {
      const paging = pageRequest(request.query, 'id');
      const { webhooks: items, total } = await webhooks.list(paging);
      setPageHeaders(request, reply, paging, total);
      return items.map(view);
    },
  );

  app.get(
    '/api/admin/webhooks/:id',
    {
      schema: {
        summary: 'A webhook',
        operationId: 'adminGetWebhook',
        description: ADMIN_ONLY,
        params: IdParams,
        response: {
          200: success(WebhookComponent.ref, 'The webhook.'),
          ...failures(['NOT_FOUND', 'UNAUTHENTICATED', 'FORBIDDEN'], { notes: unknown }),
        },
      },
      config,
    },
    async (request) => view(await webhooks.get(webhookId(request))),
  );

  app.delete(
    '/api/admin/webhooks/:id',
    {
      schema: {
        summary: 'Remove a webhook',
        operationId: 'adminDeleteWebhook',
        description: `${ADMIN_ONLY} Its deliveries go with it: pending ones are not sent.`,
        params: IdParams,
        response: {
          204: noContent('Removed.'),
          ...failures(['NOT_FOUND', 'UNAUTHENTICATED', 'FORBIDDEN'], { notes: unknown }),
        },
      },
      config,
    },
    async (request, reply) => {
      await webhooks.delete(webhookId(request));
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/api/admin/webhooks/:id/deliveries',
    {
      schema: {
        summary: "A webhook's deliveries",
        operationId: 'adminListWebhookDeliveries',
        description: `${ADMIN_ONLY} Newest first, optionally of one status, with the collection conventions (at most 10,000 deep; X-Total-Count-Capped past that). Sent and failed deliveries are kept 7 days.`,
        params: IdParams,
        querystring: DeliveriesQuery,
        response: {
          200: success(
            Type.Array(DeliveryComponent.ref, { maxItems: MAX_PAGE_SIZE }),
            'A page of deliveries.',
            'X-Total-Count',
            'X-Total-Count-Capped',
            'Link',
          ),
          ...failures(['INVALID_QUERY', 'NOT_FOUND', 'UNAUTHENTICATED', 'FORBIDDEN'], { notes: unknown }),
        },
      },
      config,
    },
    async (request, reply) => {
      const paging = pageRequest({ page: request.query.page, size: request.query.size }, 'id');
      const { deliveries, total, capped } = await webhooks.deliveries(
        webhookId(request),
        request.query.status,
        paging,
      );
      setPageHeaders(request, reply, paging, total, [], DELIVERIES_DEPTH);
      if (capped) reply.header('x-total-count-capped', 'true');
      return deliveries.map(deliveryView);
    },
  );

  app.post(
    '/api/admin/webhooks/:id/deliveries/:deliveryId/retry',
    {
      schema: {
        summary: 'Send a delivery again',
        operationId: 'adminRetryWebhookDelivery',
        description: `${ADMIN_ONLY} A failed delivery (or a sent one the receiver lost) is pending again, due now, with a fresh 24 h of retries; a pending one is only made due now. It keeps its webhook-id, so a receiver that had it can tell.`,
        params: DeliveryParams,
        response: {
          202: success(DeliveryComponent.ref, 'Queued: the delivery as it is now.'),
          ...failures(['NOT_FOUND', 'UNAUTHENTICATED', 'FORBIDDEN'], {
            notes: { NOT_FOUND: 'No webhook has that id, or it has no delivery with that id.' },
          }),
        },
      },
      config,
    },
    async (request, reply) => {
      const deliveryId = requireId(request.params.deliveryId, notFound);
      const delivery = await webhooks.retry(webhookId(request), deliveryId);
      reply.code(202);
      return deliveryView(delivery);
    },
  );
};
