import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { ErrorRenderer } from '../plugins/errors.ts';
import { component, success } from '../shared/schemas.ts';

export const RestSupportComponent = component(
  'RestSupport',
  Type.Object(
    { restSupport: Type.Boolean() },
    { additionalProperties: false, description: 'Whether the body was a user object with a string email.' },
  ),
);

// An unreadable body (bad JSON, wrong type, too large) is not an error here: it is a `false`.
const renderError: ErrorRenderer = () => ({ statusCode: 200, body: { restSupport: false } });

/** POST /rest (profile B): says whether the body is a JSON object with a string email; echoes nothing. */
export const restRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/rest',
    {
      schema: {
        summary: 'REST support probe',
        operationId: 'restProbe',
        description:
          'SPEC 4.2: always 200, even for a body that is not JSON, too large or malformed (then `false`); echoes nothing.',
        body: Type.Unknown({ description: 'Any JSON; a user object whose email is a string gives true.' }),
        response: { 200: success(RestSupportComponent.ref, 'The verdict.') },
      },
      config: { renderError },
    },
    async (request) => {
      const body = request.body;
      const restSupport =
        typeof body === 'object' &&
        body !== null &&
        !Array.isArray(body) &&
        typeof (body as { email?: unknown }).email === 'string';
      return { restSupport };
    },
  );
};
