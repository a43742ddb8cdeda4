import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Database } from '../db/database.ts';
import type { SchemaReadiness } from '../db/schema-readiness.ts';
import { AppError } from '../shared/errors.ts';
import { errorBody } from '../shared/schemas.ts';

const Status = Type.Object({ status: Type.Literal('ok') }, { additionalProperties: false });
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
      schema: { summary: 'Liveness: the process runs', response: { 200: Status } },
      config: { usesDatabase: false },
    },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        summary: 'Readiness: the database answers',
        response: { 200: Status, default: errorBody('UNAVAILABLE') },
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
