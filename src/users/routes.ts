import { Type } from 'typebox';
import { type ErrorRenderer, renderCodeOnly } from '../plugins/errors.ts';
import type { WireProfile } from '../profiles/index.ts';
import { CodeOnlyError, ErrorBody } from '../profiles/schemas.ts';
import type { App } from '../shared/fastify.ts';
import { ID_PATTERN, parseId } from '../shared/ids.ts';
import type { UsersService } from './service.ts';

const UserIdParams = Type.Object({
  id: Type.String({ pattern: ID_PATTERN, description: 'User id: decimal digits, 1 to 2^63-1.' }),
});

const RegistrationBody = Type.Object(
  {
    email: Type.String({
      description: 'An email address, at most 254 characters; unique in any letter case.',
    }),
    name: Type.String({ description: 'Display name, 1 to 100 characters after trimming.' }),
    password: Type.String({
      description: '8 to 1024 characters (after NFKC); never returned.',
      writeOnly: true,
    }),
  },
  { additionalProperties: false },
);

const ListQuery = Type.Object({
  page: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,8}$', description: 'Page number, from 1.' })),
  size: Type.Optional(
    Type.String({ pattern: '^(100|[1-9][0-9]?)$', description: 'Items per page, 1 to 100.' }),
  ),
});

const documented: { renderError: ErrorRenderer; notFoundCode: 'USER_NOT_FOUND' } = {
  renderError: renderCodeOnly,
  notFoundCode: 'USER_NOT_FOUND',
};

export function usersRoutes(app: App, users: UsersService, profile: WireProfile): void {
  app.get(
    '/api/users/:id',
    {
      schema: {
        summary: 'Get one user',
        params: UserIdParams,
        response: { 200: profile.userSchema, default: CodeOnlyError },
      },
      config: documented,
    },
    async (request) => profile.user(await users.get(parseId(request.params.id))),
  );

  if (profile.serves.userList) {
    app.get(
      '/api/users',
      {
        schema: {
          summary: 'List users',
          querystring: ListQuery,
          response: { 200: Type.Array(profile.userSchema), default: CodeOnlyError },
        },
        config: { renderError: renderCodeOnly },
      },
      async (request) => {
        const page = Number(request.query.page ?? 1);
        const size = Number(request.query.size ?? 20);
        const list = await users.list((page - 1) * size, size);
        return list.map((u) => profile.user(u));
      },
    );
  }

  app.post(
    '/api/users',
    {
      schema: {
        summary: 'Register a user',
        body: RegistrationBody,
        response: { 201: profile.userSchema, default: ErrorBody },
      },
    },
    async (request, reply) => {
      const user = await users.register(request.body);
      reply.code(201).header('location', `/api/users/${user.id}`);
      return profile.user(user);
    },
  );
}
