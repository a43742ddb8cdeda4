import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Database } from '../db/database.ts';
import type { SchemaReadiness } from '../db/schema-readiness.ts';
import { AppError } from '../shared/errors.ts';
import { component, failures, success } from '../shared/schemas.ts';

export const HealthComponent = component(
  'Health',
  Type.Object({ status: Type.Literal('ok') }, { additionalProperties: false, description: 'All is well.' }),
);
const Status = HealthComponent.ref;
const READY_TIMEOUT_MS = 1000;

export interface HealthRoutesOptions {
  database: Database;
  schema: SchemaReadiness;
}

export const healthRoutes: FastifyPluginAsyncTypebox<HealthRoutesOptions> = async (
  app,
  { database, schema },
) => {
  app.get(
    '/healthz',
    {
      schema: {
        summary: 'Liveness: the process runs',
        operationId: 'liveness',
        description: 'Answers without touching the database: restart the process only when this fails.',
        response: { 200: success(Status, 'The process runs.'), ...failures([]) },
      },
      config: { usesDatabase: false },
    },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        summary: 'Readiness: the database answers',
        operationId: 'readiness',
        description: 'Send traffic to this instance only while this answers 200.',
        response: {
          200: success(Status, 'Ready for traffic.'),
          ...failures(['UNAVAILABLE'], {
            notes: {
              UNAVAILABLE:
                'The database does not answer within a second or is not migrated yet, or the server is shutting down.',
            },
          }),
        },
      },
      config: { usesDatabase: false },
    },
    async () => {
      try {
        if (!schema.ready) throw new Error('schema not migrated yet');
        await database.ping(READY_TIMEOUT_MS);
      } catch {
        throw new AppError('UNAVAILABLE', 'The database is not answering.');
      }
      return { status: 'ok' as const };
    },
  );
};
