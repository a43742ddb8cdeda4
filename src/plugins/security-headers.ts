import fp from 'fastify-plugin';
import { DOCS_PREFIX } from './openapi.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Responses about accounts or sessions must never be stored by a cache. */
    noStore?: boolean;
  }
}

const CSP = "default-src 'none'; frame-ancestors 'none'";
const HSTS = 'max-age=31536000; includeSubDomains';

/**
 * Headers on every response, errors and 404s included. JSON needs no scripts, styles or framing,
 * so the CSP forbids all of them; nosniff stops a browser reading JSON as HTML.
 */
export const securityHeadersPlugin = fp(
  async (app) => {
    // A callback hook (no promise) keeps this off the hot path's allocation budget.
    app.addHook('onRequest', (request, reply, done) => {
      reply.header('x-content-type-options', 'nosniff');
      // The docs pages bring their own, looser policy (scripts and styles of Swagger UI).
      if (!request.url.startsWith(DOCS_PREFIX)) reply.header('content-security-policy', CSP);
      if (request.routeOptions.config.noStore) reply.header('cache-control', 'no-store');
      if (request.protocol === 'https') reply.header('strict-transport-security', HSTS);
      done();
    });
  },
  { name: 'usher-security-headers' },
);
