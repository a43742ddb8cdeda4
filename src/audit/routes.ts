// The audit log on the wire (CONTRACT "Administration"), identical in both profiles: every record
// for support staff and admins, and each user's own recent security events.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { PAGE_PATTERN, SIZE_PATTERN, setPageHeaders } from '../plugins/paging.ts';
import { currentSession } from '../sessions/index.ts';
import { AppError } from '../shared/errors.ts';
import { stringifyExact } from '../shared/exact-json.ts';
import { ID_PATTERN, parseId } from '../shared/ids.ts';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, pageRequest } from '../shared/paging.ts';
import { component, failures, Id, NullableId, success, Timestamp } from '../shared/schemas.ts';
import { type AuditRecord, USER_AGENT_MAX } from './repository.ts';
import { ACTIVITY_SIZE, ATTEMPTS_LINE, AUDIT_DEPTH, type AuditService } from './service.ts';

/** An event type, or its leading dotted part: lowercase words joined by dots. */
const TYPE_PATTERN = '^[a-z_]{1,32}(\\.[a-z_]{1,32}){0,3}$';
/** A date, or a date and time with a zone (ISO 8601 / RFC 3339). */
const TIME_PATTERN = '^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?(Z|[+-]\\d{2}:\\d{2}))?$';

const Details = Type.Record(Type.String(), Type.Unknown(), {
  description:
    'What the event adds (its method, the fields changed, the session ended, …): never a secret or a password. A failed sign-in for an email with no account keeps only `emailDigest`, a SHA-256 of the folded email. A tallied record (`signin.throttled`: one per account, or network, method and hour) adds `count`, `firstAt` and `lastAt`.',
});
const Address = Type.Union([Type.String({ maxLength: 64 }), Type.Null()], {
  description: 'The client address it came from (null: the CLI or background work).',
});
const UserAgent = Type.Union([Type.String({ maxLength: USER_AGENT_MAX }), Type.Null()], {
  description: `The client's User-Agent, its first ${USER_AGENT_MAX} characters.`,
});

export const AuditRecordComponent = component(
  'AuditRecord',
  Type.Object(
    {
      id: Id,
      at: Timestamp('When it happened.'),
      type: Type.String({ maxLength: 64, description: 'What happened: docs/audit.md lists every type.' }),
      actorId: NullableId(
        'The signed-in user who did it (null: no one signed in, the CLI, or background work).',
      ),
      userId: NullableId('The account it is about (null: none).'),
      address: Address,
      userAgent: UserAgent,
      details: Details,
    },
    { additionalProperties: false, description: 'One record of the audit log.' },
  ),
);

export const ActivityItemComponent = component(
  'ActivityItem',
  Type.Object(
    {
      id: Id,
      at: Timestamp('When it happened.'),
      type: Type.String({
        maxLength: 64,
        description: `The record's type, or \`${ATTEMPTS_LINE}\`: the one line of failed and throttled sign-ins.`,
      }),
      by: Type.Union([Type.Literal('you'), Type.Literal('staff'), Type.Literal('unknown')], {
        description:
          '`you`: signed in as this account; `staff`: support or an admin; `unknown`: no one signed in (a failed sign-in, a reset link) or the operator.',
      }),
      address: Address,
      userAgent: UserAgent,
      details: Details,
    },
    {
      additionalProperties: false,
      description: "One of the account's security events, as its owner sees it (staff's address left out).",
    },
  ),
);

const AuditQuery = Type.Object(
  {
    page: Type.Optional(
      Type.String({ pattern: PAGE_PATTERN, description: 'a whole number from 1 (default 1)' }),
    ),
    size: Type.Optional(
      Type.String({
        pattern: SIZE_PATTERN,
        description: `a whole number from 1 to ${MAX_PAGE_SIZE} (default ${DEFAULT_PAGE_SIZE})`,
      }),
    ),
    userId: Type.Optional(
      Type.String({ pattern: ID_PATTERN, description: 'Only records about this account.' }),
    ),
    type: Type.Optional(
      Type.String({
        pattern: TYPE_PATTERN,
        maxLength: 64,
        description:
          'Only this type, or the types it leads (`signin` finds `signin.succeeded` and `signin.failed`).',
      }),
    ),
    since: Type.Optional(
      Type.String({
        pattern: TIME_PATTERN,
        maxLength: 35,
        description: 'From this time on (ISO 8601), inclusive.',
      }),
    ),
    until: Type.Optional(
      Type.String({
        pattern: TIME_PATTERN,
        maxLength: 35,
        description: 'Before this time (ISO 8601), exclusive.',
      }),
    ),
  },
  { additionalProperties: true },
);

function time(name: string, raw: string | undefined): Date | undefined {
  if (raw === undefined) return undefined;
  const refused = () => new AppError('INVALID_QUERY', `${name}: not a date or time (ISO 8601)`);
  // Date would roll an impossible day or hour over (2026-02-30 as 2 March): each part is checked.
  const [, y, mo, d, h = '0', mi = '0', s = '0'] =
    /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2}))?)?/.exec(raw) ?? [];
  const day = new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d)));
  if (
    day.getUTCFullYear() !== Number(y) ||
    day.getUTCMonth() !== Number(mo) - 1 ||
    day.getUTCDate() !== Number(d) ||
    Number(h) > 23 ||
    Number(mi) > 59 ||
    Number(s) > 59
  )
    throw refused();
  const at = new Date(raw);
  if (Number.isNaN(at.getTime())) throw refused();
  return at;
}

const view = (record: AuditRecord) => ({
  id: record.id,
  at: record.at.toISOString(),
  type: record.type,
  actorId: record.actorId,
  userId: record.userId,
  address: record.address,
  userAgent: record.userAgent,
  details: record.details,
});

export const auditRoutes: FastifyPluginAsyncTypebox<{ audit: AuditService }> = async (app, { audit }) => {
  app.get(
    '/api/admin/audit',
    {
      schema: {
        summary: 'The audit log',
        operationId: 'adminAudit',
        description: `Needs a support user or an admin. Records newest first, filtered by account, type and time, with the collection conventions (X-Total-Count, Link; no sort: always newest first). Pages reach at most ${AUDIT_DEPTH} records deep (deeper: 400 INVALID_QUERY); when more match, X-Total-Count says ${AUDIT_DEPTH} and X-Total-Count-Capped is sent: narrow the search. Reading the log is audited too.`,
        querystring: AuditQuery,
        response: {
          200: success(
            Type.Array(AuditRecordComponent.ref, { maxItems: MAX_PAGE_SIZE }),
            'A page of records.',
            'X-Total-Count',
            'X-Total-Count-Capped',
            'Link',
          ),
          ...failures(['INVALID_QUERY', 'UNAUTHENTICATED', 'FORBIDDEN']),
        },
      },
      config: { auth: 'support', noStore: true },
    },
    async (request, reply) => {
      const { userId, type, since, until } = request.query;
      const paging = pageRequest({ page: request.query.page, size: request.query.size }, 'id');
      const filters = {
        userId: userId === undefined ? undefined : parseId(userId),
        type,
        since: time('since', since),
        until: time('until', until),
      };
      // An id past 2^63-1 names no account: no record is about it.
      if (userId !== undefined && filters.userId === undefined)
        throw new AppError('INVALID_QUERY', 'userId: not a user id');
      const { records, total, capped } = await audit.search(filters, paging);
      setPageHeaders(request, reply, paging, total, [], AUDIT_DEPTH);
      if (capped) reply.header('x-total-count-capped', 'true');
      // The ids that may be null are bigints: the schema's serializer cannot write a bigint in a
      // two-type field, so this answer is written with exact JSON (the schema still describes it).
      reply.serializer(stringifyExact);
      return records.map(view);
    },
  );

  app.get(
    '/api/account/activity',
    {
      schema: {
        summary: 'Your recent security events',
        operationId: 'getAccountActivity',
        description: `Your account's last security events, newest first: sign-ins, sign-outs, password, email and second-factor changes, linked identities, and what staff changed, and one line \`${ATTEMPTS_LINE}\` summing the failed and throttled sign-ins of the last 30 days (details \`failed\`, \`throttled\`, \`since\`, \`capped\`), in the place of the newest of them; ${ACTIVITY_SIZE} items at most. Where staff acted, their address is left out.`,
        response: {
          200: success(Type.Array(ActivityItemComponent.ref, { maxItems: ACTIVITY_SIZE }), 'Your events.'),
          ...failures(['UNAUTHENTICATED']),
        },
      },
      config: { auth: 'session', noStore: true },
    },
    async (request) => {
      const items = await audit.activity(currentSession(request).userId);
      return items.map((item) => ({ ...item, at: item.at.toISOString() }));
    },
  );
};
