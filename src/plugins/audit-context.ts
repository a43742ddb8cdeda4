// The actor of each request that may record an account event (the request scope, kernel/scope.ts): its session's
// user, its client address and User-Agent, carried with the rest of the request's work. Set in a
// preHandler, once the body is read and the route's session checked, on the routes that write
// (every method but GET and HEAD), on the staff routes (whose reads are audited) and on the GET
// routes whose config says `audited` (a provider's callback signs in): the lookups and lists that
// record nothing run no hook for it.
import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Journal } from '../kernel/journal.ts';
import { actingAs } from '../kernel/scope.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A GET route that records account events (a sign-in's callback): its actor is carried. */
    audited?: boolean;
  }
}

function carryActor(request: FastifyRequest, _reply: FastifyReply, done: () => void): void {
  const ua = request.headers['user-agent'];
  actingAs(
    {
      actorId: request.usherSession?.userId ?? null,
      address: request.ip,
      userAgent: ua === undefined ? null : ua,
    },
    done,
  );
}

/**
 * The record of an admin call that was refused (403: not staff, or support where admin is needed;
 * 404, 409, …): written after the answer, as nothing changed for it to be written with.
 */
function refusalRecorder(journal: Journal) {
  return (request: FastifyRequest, reply: FastifyReply, done: () => void): void => {
    const session = request.usherSession;
    // A refusal: 4xx but 401 (no caller to name); a 5xx is Usher's failure, not a refusal.
    if (reply.statusCode >= 400 && reply.statusCode < 500 && reply.statusCode !== 401 && session) {
      const ua = request.headers['user-agent'];
      journal
        .record({
          type: 'admin.refused',
          userId: null,
          actor: { actorId: session.userId, address: request.ip, userAgent: ua ?? null },
          details: {
            method: request.method,
            route: request.routeOptions.url ?? null,
            params: request.params ?? {},
            status: reply.statusCode,
          },
        })
        .catch((err: unknown) => request.log.warn({ err }, 'a refused admin call could not be recorded'));
    }
    done();
  };
}

export const auditContextPlugin = fp<{ journal: Journal }>(
  async (app, { journal }) => {
    const recordRefusal = refusalRecorder(journal);
    app.addHook('onRoute', (route) => {
      if (route.url.startsWith('/api/admin/') || route.url === '/api/admin')
        route.onResponse = [...[route.onResponse ?? []].flat(), recordRefusal];
      const methods = [route.method].flat();
      const writes = methods.some((method) => method !== 'GET' && method !== 'HEAD');
      // Staff routes' reads are recorded too (every admin call is audited with its actor).
      const staff = route.config?.auth === 'support' || route.config?.auth === 'admin';
      if (!writes && !staff && route.config?.audited !== true) return;
      route.preHandler = [...[route.preHandler ?? []].flat(), carryActor];
    });
  },
  { name: 'usher-audit-context', dependencies: ['usher-session'] },
);
