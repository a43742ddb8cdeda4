import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { type TSchema, Type } from 'typebox';
import { ReauthBody } from '../kernel/reauth.ts';
import { PASSWORD_INPUT_MAX, PASSWORD_MAX } from '../passwords/index.ts';
import { type ErrorRenderer, renderCodeOnly } from '../plugins/errors.ts';
import { pageOf, pagingQuery, setPageHeaders } from '../plugins/paging.ts';
import { type Authenticator, currentSession, SessionComponent, sessionBody } from '../sessions/index.ts';
import { mapAwaitable } from '../shared/awaitable.ts';
import { BODY_LIMITS } from '../shared/body-limits.ts';
import { ID_PATTERN, PROVIDER_ID, requireId } from '../shared/ids.ts';
import { BUILT_IN_LOCALES, LOCALE_MAX } from '../shared/locale.ts';
import { MAX_PAGE_DEPTH, type PageRequest, pageRequest } from '../shared/paging.ts';
import {
  BODY_ERRORS,
  bodyOptional,
  component,
  failures,
  noContent,
  success,
  Timestamp,
} from '../shared/schemas.ts';
import { toUser } from './repository.ts';
import { EMAIL_MAX, NAME_MAX } from './rules.ts';
import { type AccountIdentity, type UsersService, userNotFound } from './service.ts';
import type { UserLookup } from './settings.ts';
import { USER_DEEP_SORTS, USER_SORT_KEYS, type User, type UserSortKey } from './user.ts';

const UserIdParams = Type.Object({
  id: Type.String({ pattern: ID_PATTERN, description: 'User id: decimal digits, 1 to 2^63-1.' }),
});

const userFields = {
  email: Type.String({
    maxLength: EMAIL_MAX,
    description: `An email address, at most ${EMAIL_MAX} characters; unique in any letter case.`,
  }),
  name: Type.String({
    maxLength: NAME_MAX,
    description: `Display name, 1 to ${NAME_MAX} characters after trimming; no control characters.`,
  }),
  password: Type.String({
    // The raw bound of the hasher; the rule (8 to 1024 after NFKC) is the service's.
    maxLength: PASSWORD_INPUT_MAX,
    description: `8 to ${PASSWORD_MAX} characters after NFKC (at most ${PASSWORD_INPUT_MAX} as sent); not a common password; never returned.`,
    writeOnly: true,
  }),
};

/** An account's language on input; the service checks the tag and keeps its canonical form. */
const localeInput = (more = '') =>
  Type.String({
    // Bounded generously here: a longer one is still refused, in the rule's words, by the service.
    maxLength: LOCALE_MAX * 4,
    description: `The account's language: a BCP 47 tag of at most ${LOCALE_MAX} characters (\`en\`, \`de-AT\`, \`pt-BR\`), stored in its canonical form. Mails to the account are written in the best match among the languages there are texts for (Usher's: ${BUILT_IN_LOCALES.join(', ')}; de-AT → de; anything else → en). Not part of the user object in either profile: GET /api/account shows it.${more}`,
    examples: ['de-AT'],
  });

const RegistrationBody = Type.Object(
  {
    ...userFields,
    locale: Type.Optional(
      localeInput(
        " Without it, the first language of the request's Accept-Language there are texts for, else `en`.",
      ),
    ),
  },
  { additionalProperties: false },
);
const UpdateBody = Type.Object(
  {
    email: userFields.email,
    name: userFields.name,
    password: Type.Optional(userFields.password),
    currentPassword: Type.Optional(
      Type.String({
        // Not limited here: a wrong one of any length is the same refusal (and counts in the throttle).
        description:
          'Your present password: required when the email (in more than letter case) or the password changes.',
        writeOnly: true,
      }),
    ),
    locale: Type.Optional(localeInput(' Without it, the account keeps its own.')),
  },
  { additionalProperties: false },
);

const AUTH_ERRORS = ['UNAUTHENTICATED', 'FORBIDDEN'] as const;

/** GET /api/session's answer; named per profile since it holds the profile's user. */
export const currentSessionFor = (users: Pick<UserWireFormat, 'userSchema'>) =>
  component(
    'CurrentSession',
    Type.Object(
      { user: users.userSchema, session: SessionComponent.ref },
      { additionalProperties: false, description: 'Who is signed in, and the session making the request.' },
    ),
  );

/** A linked identity's public id: 32 random hex digits. */
export const IDENTITY_ID = /^[0-9a-f]{32}$/;

/** A linked provider identity, as GET /api/account and GET /api/identities show it. */
export const IdentitySchema = Type.Object(
  {
    id: Type.String({
      pattern: IDENTITY_ID.source,
      maxLength: 32,
      description: 'For DELETE /api/identities/{id}.',
    }),
    provider: Type.String({ pattern: PROVIDER_ID.source, maxLength: 32, description: 'The provider id.' }),
    email: Type.String({ maxLength: EMAIL_MAX, description: 'The email the provider last gave for it.' }),
    createdAt: Timestamp(),
  },
  { additionalProperties: false, description: 'An external identity linked to your account.' },
);

export const identityView = (identity: AccountIdentity) => ({
  id: identity.id,
  provider: identity.provider,
  email: identity.email,
  createdAt: identity.createdAt.toISOString(),
});

/** GET /api/account's answer; named per profile since it holds the profile's user. */
export const accountComponentFor = (profile: Pick<UserWireFormat, 'userSchema'>) =>
  component(
    'Account',
    Type.Object(
      {
        user: profile.userSchema,
        password: Type.Boolean({
          description: 'The account has a password (one made through forgot-password counts).',
        }),
        totp: Type.Boolean({ description: 'Two-step sign-in (TOTP) is in force: set up and confirmed.' }),
        passkeys: Type.Integer({
          minimum: 0,
          maximum: 2_147_483_647,
          format: 'int32',
          description: 'How many passkeys the account has.',
        }),
        identities: Type.Array(IdentitySchema, {
          maxItems: 1000,
          description: 'Linked provider identities, oldest first (the same as GET /api/identities).',
        }),
        role: Type.Union([Type.Literal('user'), Type.Literal('support'), Type.Literal('admin')], {
          description:
            'What the account may administer: `user` (nothing), `support` (find users, end sessions, send mails) or `admin` (everything); see the administration tag.',
        }),
        locale: Type.String({
          maxLength: LOCALE_MAX,
          description: `The account's language: a canonical BCP 47 tag (\`en\` unless chosen; set at registration from Accept-Language, changed with \`locale\` in PUT /api/users/{id}). Mails to the account are written in the best match among the languages there are texts for (Usher's: ${BUILT_IN_LOCALES.join(', ')}).`,
          examples: ['de-AT'],
        }),
      },
      {
        additionalProperties: false,
        description: 'The signed-in account and the ways it can sign in.',
      },
    ),
  );

const documented: { renderError: ErrorRenderer; notFoundCode: 'USER_NOT_FOUND'; noStore: true } = {
  renderError: renderCodeOnly,
  notFoundCode: 'USER_NOT_FOUND',
  noStore: true,
};

/**
 * The wire format as the user routes use it. Declared here, and met by profiles/index.ts's
 * WireProfile, so users/ does not depend on profiles/ (which builds its shapes on users/user.ts).
 */
export interface UserWireFormat {
  /** Whether GET /api/users exists. */
  readonly serves: { readonly userList: boolean };
  /** The user as this profile writes it, and its schema. */
  readonly userSchema: TSchema;
  user(user: User): object;
}

export interface UsersRoutesOptions {
  users: UsersService;
  guard: Authenticator;
  profile: UserWireFormat;
  /** Who may look users up (USER_LOOKUP); `public` by default, the specification's behaviour. */
  lookup?: UserLookup;
}

const LOOKUP_NOTE: Record<UserLookup, string> = {
  public: '',
  'signed-in':
    'This server answers only callers with a session; to anyone else every id is unknown (404) and the list empty.',
  self: "This server shows a caller only their own record; to anyone else every id is unknown (404) and the list holds at most the caller's own record.",
};

export const usersRoutes: FastifyPluginAsyncTypebox<UsersRoutesOptions> = async (
  app,
  { users, guard, profile, lookup = 'public' },
) => {
  /**
   * The user id the caller is signed in as, when the lookup mode cares; a session is never
   * required here (and never resolved in `public` mode, the specification's behaviour).
   */
  const viewer = async (request: FastifyRequest): Promise<bigint | undefined> =>
    lookup === 'public' ? undefined : (await guard.session(request))?.userId;
  /** Whether the caller may see user `id`. One who may not gets the unknown-id answer: nothing leaks. */
  const maySee = (viewerId: bigint | undefined, id: bigint): boolean =>
    lookup === 'public' || (viewerId !== undefined && (lookup === 'signed-in' || viewerId === id));

  app.get(
    '/api/users/:id',
    {
      schema: {
        summary: 'Get one user',
        operationId: 'getUser',
        description:
          `The user with that id, in this profile's shape (SPEC 4.1). ${LOOKUP_NOTE[lookup]}`.trim(),
        params: UserIdParams,
        response: {
          200: success(profile.userSchema, 'The user.'),
          ...failures(['USER_NOT_FOUND'], { codeOnly: true }),
        },
      },
      config: documented,
    },
    (request) => {
      const id = requireId(request.params.id, userNotFound);
      // The hottest route: in public mode, on SQLite, answered in this turn (shared/awaitable.ts).
      if (lookup === 'public') return mapAwaitable(users.get(id), profile.user);
      return viewer(request).then((viewerId) => {
        if (!maySee(viewerId, id)) throw userNotFound();
        return mapAwaitable(users.get(id), profile.user);
      });
    },
  );

  /** The page the caller may see: all users, none, or (self) their own record alone. */
  const listFor = async (viewerId: bigint | undefined, paging: PageRequest<UserSortKey>) => {
    if (lookup === 'public' || (lookup === 'signed-in' && viewerId !== undefined)) return users.list(paging);
    if (viewerId === undefined) return { users: [], total: 0 };
    const me = await users.find(viewerId);
    if (!me) return { users: [], total: 0 };
    return { users: paging.offset === 0 ? [me] : [], total: 1 };
  };

  if (profile.serves.userList) {
    app.get(
      '/api/users',
      {
        schema: {
          summary: 'List users',
          operationId: 'listUsers',
          description:
            `One page of users, ordered by \`sort\` (SPEC 4.2 paging). In id order (the default) every page can be read; in the other orders page × size may be at most ${MAX_PAGE_DEPTH}, and \`Link\` stops there. ${LOOKUP_NOTE[lookup]}`.trim(),
          querystring: pagingQuery(USER_SORT_KEYS),
          response: {
            200: pageOf(profile.userSchema, 'A page of users.'),
            ...failures(['INVALID_QUERY'], {
              codeOnly: true,
              notes: {
                INVALID_QUERY: `A page, size or sort value that is not accepted, or page × size over ${MAX_PAGE_DEPTH} in an order other than id (a page that starts past the end is still an empty array).`,
              },
            }),
          },
        },
        config: { renderError: renderCodeOnly, noStore: true },
      },
      async (request, reply) => {
        const paging = pageRequest(request.query, 'id' as const);
        const { users: page, total } = await listFor(await viewer(request), paging);
        setPageHeaders(request, reply, paging, total, USER_DEEP_SORTS);
        return page.map((u) => profile.user(u));
      },
    );
  }

  app.get(
    '/api/session',
    {
      schema: {
        summary: 'Who is signed in: the user and the session making the request',
        operationId: 'getCurrentSession',
        description:
          'The user and session behind the cookie or Bearer token; a page view of a signed-in user.',
        response: {
          200: success(currentSessionFor(profile).ref, 'The signed-in user and this session.'),
          ...failures(['UNAUTHENTICATED']),
        },
      },
      config: { auth: 'session', noStore: true },
    },
    // Not async: the session check has run, so the answer goes out in this turn (no promise).
    (request) => {
      const session = currentSession(request);
      // The user as read with the session: no second query.
      return { user: profile.user(toUser(session.owner)), session: sessionBody(session) };
    },
  );

  app.get(
    '/api/account',
    {
      schema: {
        summary: 'Your account and how it signs in',
        operationId: 'getAccount',
        description:
          'The signed-in user, whether the account has a password (an account may have none: then a password ' +
          'sign-in fails as with a wrong password, and forgot-password sets one), whether TOTP is in force, ' +
          'how many passkeys it has, its linked identities and its role. The same in both profiles, but for ' +
          "the user object, which is the profile's.",
        response: {
          200: success(accountComponentFor(profile).ref, 'The account.'),
          ...failures(['UNAUTHENTICATED']),
        },
      },
      config: { auth: 'session', noStore: true },
    },
    async (request) => {
      const account = await users.account(currentSession(request));
      return {
        ...account,
        user: profile.user(account.user),
        identities: account.identities.map(identityView),
      };
    },
  );

  app.post(
    '/api/users',
    {
      schema: {
        summary: 'Register a user',
        operationId: 'registerUser',
        description:
          'Creates an account and mails a link to confirm its email address. The password is stored only as ' +
          'an argon2id hash. Limited per client address: registrations per 15 minutes and at once (429). ' +
          "The account's language (`locale`, which mails are written in) is the body's `locale`, else the first " +
          'language of Accept-Language there are texts for, else `en`; the user object does not show it.',
        body: RegistrationBody,
        response: {
          201: success(profile.userSchema, 'Registered.', 'Location'),
          ...failures(['EMAIL_TAKEN', 'TOO_MANY_REQUESTS', ...BODY_ERRORS], {
            notes: {
              TOO_MANY_REQUESTS:
                'Too many registrations from this client address, in the last 15 minutes or at once.',
              UNAVAILABLE:
                'The database does not answer, the server is shutting down, or too many registrations are being handled at once (with Retry-After).',
            },
          }),
        },
      },
      config: { noStore: true },
    },
    async (request, reply) => {
      const user = await users.register(request.body, {
        address: request.ip,
        acceptLanguage: request.headers['accept-language'],
      });
      reply.code(201).header('location', `/api/users/${user.id}`);
      return profile.user(user);
    },
  );

  app.put(
    '/api/users/:id',
    {
      bodyLimit: BODY_LIMITS.account,
      schema: {
        summary: 'Replace your own email and name (and optionally password)',
        operationId: 'updateUser',
        description:
          'A new email (other than in letter case) or a new password needs `currentPassword`: missing or wrong, ' +
          '400 VALIDATION_FAILED (`currentPassword: …`); wrong ones count in the sign-in throttle, and once it ' +
          'holds the account, 429 SIGNIN_FAILED with Retry-After. `locale` (optional) changes the language the ' +
          "account's mail is written in; without it the account keeps its own. A bad tag is 400 " +
          'VALIDATION_FAILED (`locale: …`) and changes nothing.',
        params: UserIdParams,
        body: UpdateBody,
        response: {
          200: success(profile.userSchema, 'Changed.'),
          ...failures(
            [
              ...AUTH_ERRORS,
              'USER_NOT_FOUND',
              'EMAIL_TAKEN',
              ...BODY_ERRORS,
              ['SIGNIN_FAILED', 429],
              'TOO_MANY_REQUESTS',
            ],
            {
              notes: {
                SIGNIN_FAILED: 'Wrong present passwords (`currentPassword`) have throttled the account.',
                TOO_MANY_REQUESTS:
                  'A new email beyond the mail caps: 3 email changes per account, or 3 mails from email changes to one address, per 15 minutes.',
                FORBIDDEN: 'Not your own account, or a cookie sent cross-site.',
              },
            },
          ),
        },
      },
      config: { auth: 'session', notFoundCode: 'USER_NOT_FOUND', noStore: true },
    },
    async (request) => {
      const session = currentSession(request);
      return profile.user(
        await users.update(session, requireId(request.params.id, userNotFound), request.body, {
          address: request.ip,
        }),
      );
    },
  );

  app.delete(
    '/api/users/:id',
    {
      schema: {
        summary: 'Delete your own account',
        operationId: 'deleteUser',
        description:
          'Deletes your account and ends its sessions; the session cookie is cleared. Needs a sign-in of the ' +
          'last 10 minutes or your present password in `currentPassword` (the body is optional): otherwise ' +
          '403 FORBIDDEN; a wrong one is 400 VALIDATION_FAILED (`currentPassword: …`) and counts in the ' +
          'sign-in throttle (429 SIGNIN_FAILED once it holds the account). A verified address is mailed a notice.',
        params: UserIdParams,
        body: ReauthBody,
        response: {
          204: noContent('Deleted.', 'Set-Cookie'),
          ...failures([...AUTH_ERRORS, 'USER_NOT_FOUND', ...BODY_ERRORS, ['SIGNIN_FAILED', 429]], {
            notes: {
              FORBIDDEN:
                'Not your own account, a cookie sent cross-site, or a sign-in over 10 minutes old without `currentPassword`.',
              SIGNIN_FAILED: 'Wrong present passwords (`currentPassword`) have throttled the account.',
            },
          }),
        },
      },
      preValidation: bodyOptional,
      config: { auth: 'session', notFoundCode: 'USER_NOT_FOUND', noStore: true },
    },
    async (request, reply) => {
      const session = currentSession(request);
      await users.delete(session, requireId(request.params.id, userNotFound), request.body, {
        address: request.ip,
      });
      guard.clearCookie(request, reply);
      return reply.code(204).send(null);
    },
  );
};
