// The admin API (CONTRACT "Administration"), identical in both profiles: support staff read,
// end sessions and send mails; everything else needs an admin. The role is checked once, by the
// sessions plugin, from each route's `auth` (sessions/guard.ts), before the body is read.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { PasskeyComponent } from '../passkeys/index.ts';
import { pagingQuery, setPageHeaders } from '../plugins/paging.ts';
import { currentSession, SessionListItemComponent } from '../sessions/index.ts';
import { AppError } from '../shared/errors.ts';
import { ID_PATTERN, requireId } from '../shared/ids.ts';
import { LOCALE_MAX } from '../shared/locale.ts';
import { MAX_PAGE_SIZE, pageRequest } from '../shared/paging.ts';
import { bodyOptional, component, failures, Id, noContent, success, Timestamp } from '../shared/schemas.ts';
import { checkStorableText } from '../shared/text.ts';
import { EMAIL_MAX, IdentitySchema, identityView, NAME_MAX } from '../users/index.ts';
import { ADMIN_SORT_KEYS, type AdminUserRecord } from './repository.ts';
import { type Acting, type AdminService, type AdminUserDetail, notFound, SEARCH_DEPTH } from './service.ts';

/** CONTRACT: up to 20 application roles, each `[a-z0-9:_-]{1,64}`. */
export const APP_ROLE_PATTERN = '^[a-z0-9:_-]{1,64}$';
const APP_ROLES_MAX = 20;
const REASON_MAX = 500;
const QUERY_MAX = 254;

const Role = Type.Union([Type.Literal('user'), Type.Literal('support'), Type.Literal('admin')], {
  description:
    'What the account may administer: `user` (nothing), `support` (read, end sessions, send mails), `admin`.',
});
const AppRoles = Type.Array(Type.String({ pattern: APP_ROLE_PATTERN, maxLength: 64 }), {
  maxItems: APP_ROLES_MAX,
  description: `The application's own roles (at most ${APP_ROLES_MAX}, each [a-z0-9:_-]{1,64}), carried in ID and access tokens as \`roles\`.`,
});

const adminUserFields = {
  id: Id,
  email: Type.String({ maxLength: EMAIL_MAX }),
  name: Type.String({ maxLength: NAME_MAX }),
  role: Role,
  roles: AppRoles,
  status: Type.Union([Type.Literal('active'), Type.Literal('disabled')], {
    description: '`disabled`: an admin disabled the account; no way of signing in admits it.',
  }),
  emailVerified: Type.Boolean(),
  createdAt: Timestamp(),
  lastSignInAt: Type.Union([Timestamp(), Type.Null()], {
    description: 'When its latest session was granted; null if it never signed in.',
  }),
};

export const AdminUserComponent = component(
  'AdminUser',
  Type.Object(adminUserFields, {
    additionalProperties: false,
    description: 'An account as support staff see it.',
  }),
);

export const AdminUserDetailComponent = component(
  'AdminUserDetail',
  Type.Object(
    {
      ...adminUserFields,
      disabledReason: Type.Union([Type.String({ maxLength: REASON_MAX }), Type.Null()], {
        description: 'What the admin who disabled it wrote, if anything.',
      }),
      password: Type.Boolean({ description: 'The account has a password.' }),
      totp: Type.Boolean({ description: 'Two-step sign-in (TOTP) is in force.' }),
      passkeys: Type.Array(PasskeyComponent.ref, { maxItems: 100 }),
      identities: Type.Array(IdentitySchema, { maxItems: 1000 }),
      sessions: Type.Array(SessionListItemComponent.ref, {
        maxItems: 1000,
        description:
          'Its live sessions, newest first, as GET /api/sessions lists them (`current`: your own).',
      }),
    },
    {
      additionalProperties: false,
      description:
        'An account, every way it signs in, and its sessions: what support needs to help its owner.',
    },
  ),
);

const UserIdParams = Type.Object({
  id: Type.String({ pattern: ID_PATTERN, description: 'User id: decimal digits, 1 to 2^63-1.' }),
});

const SearchQuery = Type.Object(
  {
    ...pagingQuery(ADMIN_SORT_KEYS).properties,
    q: Type.Optional(
      Type.String({
        maxLength: QUERY_MAX,
        description: 'Part of the email or the name, in any letter case (empty: every user).',
      }),
    ),
    status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('disabled')])),
    verified: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])),
    role: Type.Optional(Role),
  },
  { additionalProperties: true },
);

const PatchBody = Type.Object(
  {
    name: Type.Optional(Type.String({ maxLength: 1000 })),
    email: Type.Optional(Type.String({ maxLength: 1000 })),
    emailVerified: Type.Optional(Type.Boolean()),
    role: Type.Optional(Role),
    roles: Type.Optional(AppRoles),
  },
  { additionalProperties: false },
);
const DisableBody = Type.Object(
  {
    reason: Type.Optional(
      Type.String({ maxLength: REASON_MAX, description: 'Kept with the account for support.' }),
    ),
  },
  { additionalProperties: false },
);
const EmptyBody = Type.Object({}, { additionalProperties: false });
const InviteBody = Type.Object(
  {
    email: Type.String({ maxLength: 1000 }),
    name: Type.String({ maxLength: 1000 }),
    roles: Type.Optional(AppRoles),
    locale: Type.Optional(
      Type.String({
        maxLength: LOCALE_MAX * 4,
        description: `The invitee's language: a BCP 47 tag of at most ${LOCALE_MAX} characters (\`de-AT\`), stored in its canonical form; the invitation and later mails are written in the best match there are texts for. Without it, the first language of the request's Accept-Language there are texts for (the admin's browser: give it when the invitee reads another), else \`en\`.`,
        examples: ['fr'],
      }),
    ),
  },
  { additionalProperties: false },
);
const Accepted = Type.Object({ status: Type.Literal('accepted') }, { additionalProperties: false });

const record = (user: AdminUserRecord) => ({
  id: user.id,
  email: user.email,
  name: user.name,
  role: user.role,
  roles: user.roles,
  status: user.disabledAt === null ? ('active' as const) : ('disabled' as const),
  emailVerified: user.emailVerified,
  createdAt: user.createdAt.toISOString(),
  lastSignInAt: user.lastSignInAt?.toISOString() ?? null,
});

const detail = (user: AdminUserDetail) => ({
  ...record(user),
  disabledReason: user.disabledReason,
  password: user.password,
  totp: user.totp,
  passkeys: user.passkeys.map((p) => ({ id: p.id, name: p.name, createdAt: p.createdAt.toISOString() })),
  identities: user.identities.map(identityView),
  sessions: user.sessions.map((s) => ({
    id: s.id,
    createdAt: s.createdAt.toISOString(),
    lastSeenAt: s.lastSeenAt.toISOString(),
    expiresAt: s.expiresAt.toISOString(),
    current: s.current,
    userAgent: s.userAgent,
  })),
});

const acting = (request: FastifyRequest): Acting => ({
  session: currentSession(request),
  address: request.ip,
  userAgent: request.headers['user-agent'],
});

const userId = (request: FastifyRequest<{ Params: { id: string } }>) =>
  requireId(request.params.id, notFound);

const ADMIN_ONLY = 'Needs an admin.';
const SUPPORT = 'Needs a support user or an admin.';

export const adminRoutes: FastifyPluginAsyncTypebox<{ admin: AdminService }> = async (app, { admin }) => {
  const common = { auth: 'admin', noStore: true, notFoundCode: 'NOT_FOUND' } as const;
  const support = { ...common, auth: 'support' } as const;
  const unknownUser = { NOT_FOUND: 'No user has that id.' };
  const detailAnswer = (description: string) => success(AdminUserDetailComponent.ref, description);

  app.get(
    '/api/admin/users',
    {
      schema: {
        summary: 'Find users by part of their email or name',
        operationId: 'adminSearchUsers',
        description: `${SUPPORT} Users whose email or name contains \`q\` (any letter case, any script; indexed for substring search from three characters), filtered by status, verification and role, with the collection conventions (X-Total-Count, Link). Pages reach at most ${SEARCH_DEPTH} rows deep in any order (deeper: 400 INVALID_QUERY); when more match, X-Total-Count says ${SEARCH_DEPTH} and X-Total-Count-Capped is sent: narrow the search. Every search is audited; the query is not written to the access log.`,
        querystring: SearchQuery,
        response: {
          200: success(
            Type.Array(AdminUserComponent.ref, { maxItems: MAX_PAGE_SIZE }),
            'A page of users.',
            'X-Total-Count',
            'X-Total-Count-Capped',
            'Link',
          ),
          ...failures(['INVALID_QUERY', 'UNAUTHENTICATED', 'FORBIDDEN']),
        },
      },
      // The query may be someone's email: the access log keeps the path only.
      config: { auth: 'support', noStore: true, secretQuery: true },
    },
    async (request, reply) => {
      const { q, status, verified, role } = request.query;
      if (q?.includes('\u0000'))
        throw new AppError('INVALID_QUERY', 'q: must not contain the NUL character (U+0000)');
      const paging = pageRequest(request.query, 'id' as const);
      const filters = {
        q: q?.trim() || undefined,
        status,
        verified: verified === undefined ? undefined : verified === 'true',
        role,
      };
      const { users, total, capped } = await admin.search(acting(request), filters, paging);
      setPageHeaders(request, reply, paging, total, [], SEARCH_DEPTH);
      if (capped) reply.header('x-total-count-capped', 'true');
      return users.map(record);
    },
  );

  app.get(
    '/api/admin/users/:id',
    {
      schema: {
        summary: "A user's account, sign-in methods and sessions",
        operationId: 'adminGetUser',
        description: `${SUPPORT} Audited.`,
        params: UserIdParams,
        response: {
          200: detailAnswer('The account.'),
          ...failures(['NOT_FOUND', 'UNAUTHENTICATED', 'FORBIDDEN'], { notes: unknownUser }),
        },
      },
      config: support,
    },
    async (request) => detail(await admin.view(acting(request), userId(request))),
  );

  app.patch(
    '/api/admin/users/:id',
    {
      schema: {
        summary: "Change a user's name, email, verification, role or application roles",
        operationId: 'adminUpdateUser',
        description: `${ADMIN_ONLY} Only the fields sent change. A new email is unverified (and mailed a confirmation link) unless \`emailVerified: true\` comes with it; the old address is told. The last admin who can sign in cannot be demoted (409 LAST_ADMIN).`,
        params: UserIdParams,
        body: PatchBody,
        response: {
          200: detailAnswer('The account as it is now.'),
          ...failures(
            ['VALIDATION_FAILED', 'NOT_FOUND', 'EMAIL_TAKEN', 'LAST_ADMIN', 'UNAUTHENTICATED', 'FORBIDDEN'],
            {
              notes: unknownUser,
            },
          ),
        },
      },
      config: common,
    },
    async (request) => detail(await admin.update(acting(request), userId(request), request.body)),
  );

  app.post(
    '/api/admin/users/:id/disable',
    {
      schema: {
        summary: 'Disable an account: every session ends, every way in refuses it',
        operationId: 'adminDisableUser',
        description: `${ADMIN_ONLY} Sessions end and what apps hold through Usher's provider (refresh tokens, grants) is revoked at once; JWT access tokens already issued stay valid until they expire (ACCESS_TOKEN_TTL_SECONDS, 5 minutes by default). Every sign-in method then answers 403 SIGNIN_FAILED, only after a right credential (a wrong one is answered as for any account). Not the last admin (409 LAST_ADMIN).`,
        params: UserIdParams,
        body: DisableBody,
        response: {
          200: detailAnswer('The account, disabled.'),
          ...failures(['VALIDATION_FAILED', 'NOT_FOUND', 'LAST_ADMIN', 'UNAUTHENTICATED', 'FORBIDDEN'], {
            notes: unknownUser,
          }),
        },
      },
      config: common,
      preValidation: bodyOptional,
    },
    async (request) => {
      const { reason } = request.body;
      return detail(
        await admin.disable(acting(request), userId(request), reason && checkStorableText('reason', reason)),
      );
    },
  );

  app.post(
    '/api/admin/users/:id/enable',
    {
      schema: {
        summary: 'Enable a disabled account again',
        operationId: 'adminEnableUser',
        description: ADMIN_ONLY,
        params: UserIdParams,
        body: EmptyBody,
        response: {
          200: detailAnswer('The account, enabled.'),
          ...failures(['VALIDATION_FAILED', 'NOT_FOUND', 'UNAUTHENTICATED', 'FORBIDDEN'], {
            notes: unknownUser,
          }),
        },
      },
      config: common,
      preValidation: bodyOptional,
    },
    async (request) => detail(await admin.enable(acting(request), userId(request))),
  );

  app.delete(
    '/api/admin/users/:id',
    {
      schema: {
        summary: 'Delete an account',
        operationId: 'adminDeleteUser',
        description: `${ADMIN_ONLY} As the owner's own deletion: sessions, products and reviews go too; a verified address is told. Not the last admin (409 LAST_ADMIN).`,
        params: UserIdParams,
        response: {
          204: noContent('Deleted.'),
          ...failures(['NOT_FOUND', 'LAST_ADMIN', 'UNAUTHENTICATED', 'FORBIDDEN'], { notes: unknownUser }),
        },
      },
      config: common,
    },
    async (request, reply) => {
      await admin.delete(acting(request), userId(request));
      return reply.code(204).send(null);
    },
  );

  app.delete(
    '/api/admin/users/:id/sessions',
    {
      schema: {
        summary: "End every session of a user's (a stolen device, say)",
        operationId: 'adminEndUserSessions',
        description: `${SUPPORT} Every Usher session ends on every instance at once, and what apps hold through Usher's provider is revoked.`,
        params: UserIdParams,
        response: {
          204: noContent('Ended.'),
          ...failures(['NOT_FOUND', 'UNAUTHENTICATED', 'FORBIDDEN'], { notes: unknownUser }),
        },
      },
      config: support,
    },
    async (request, reply) => {
      await admin.endSessions(acting(request), userId(request));
      return reply.code(204).send(null);
    },
  );

  app.delete(
    '/api/admin/users/:id/mfa',
    {
      schema: {
        summary: 'Remove lost second factors: TOTP, its recovery codes and passkeys',
        operationId: 'adminRemoveSecondFactors',
        description: `${ADMIN_ONLY} For someone who lost both their device and their recovery codes. The owner is told by mail.`,
        params: UserIdParams,
        response: {
          204: noContent('Removed (or there was nothing to remove).'),
          ...failures(['NOT_FOUND', 'UNAUTHENTICATED', 'FORBIDDEN'], { notes: unknownUser }),
        },
      },
      config: common,
    },
    async (request, reply) => {
      await admin.removeSecondFactors(acting(request), userId(request));
      return reply.code(204).send(null);
    },
  );

  const mails = {
    'password-reset': {
      summary: 'Mail the user a password-reset link',
      operationId: 'adminSendPasswordReset',
      description: `${SUPPORT} The same mail as forgot-password sends, not limited.`,
      send: (request: FastifyRequest<{ Params: { id: string } }>) =>
        admin.sendPasswordReset(acting(request), userId(request)),
    },
    verification: {
      summary: 'Mail the user a new link to confirm their email',
      operationId: 'adminSendVerification',
      description: `${SUPPORT} 400 VALIDATION_FAILED when the email is verified already.`,
      send: (request: FastifyRequest<{ Params: { id: string } }>) =>
        admin.sendVerification(acting(request), userId(request)),
    },
  };
  for (const [path, { send, ...doc }] of Object.entries(mails)) {
    app.post(
      `/api/admin/users/:id/${path}`,
      {
        schema: {
          ...doc,
          params: UserIdParams,
          body: EmptyBody,
          response: {
            202: success(Accepted, 'The mail is on its way.'),
            ...failures(['VALIDATION_FAILED', 'NOT_FOUND', 'UNAUTHENTICATED', 'FORBIDDEN'], {
              notes: unknownUser,
            }),
          },
        },
        config: support,
        preValidation: bodyOptional,
      },
      async (request, reply) => {
        await send(request);
        return reply.code(202).send({ status: 'accepted' as const });
      },
    );
  }

  app.post(
    '/api/admin/users',
    {
      schema: {
        summary: 'Invite someone: an account without a password, and a mail to choose one',
        operationId: 'adminInviteUser',
        description: `${ADMIN_ONLY} The link (to {PUBLIC_URL}/reset-password) works once, for 7 days; following it sets the password and proves the address.`,
        body: InviteBody,
        response: {
          201: success(AdminUserDetailComponent.ref, 'Invited.', 'Location'),
          ...failures(['VALIDATION_FAILED', 'EMAIL_TAKEN', 'UNAUTHENTICATED', 'FORBIDDEN']),
        },
      },
      config: { auth: 'admin', noStore: true },
    },
    async (request, reply) => {
      const invited = await admin.invite(acting(request), request.body, request.headers['accept-language']);
      reply.code(201).header('location', `/api/admin/users/${invited.id}`);
      return detail(invited);
    },
  );
};
