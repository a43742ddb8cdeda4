import cookie from '@fastify/cookie';
import fp from 'fastify-plugin';
import type { Authenticator } from './guard.ts';

/**
 * Sessions for the whole app: cookies parsed and set through @fastify/cookie, and one check for
 * every route whose config says `auth: 'session'`, instead of a hook on each of them.
 */
export const sessionPlugin = fp<{ guard: Authenticator }>(
  async (app, { guard }) => {
    await app.register(cookie);
    app.decorateRequest('usherSession', null);
    app.addHook('onRequest', (request, _reply, done) => {
      if (request.routeOptions.config.auth !== 'session') {
        done();
        return;
      }
      guard.required(request).then(() => done(), done);
    });
  },
  { name: 'usher-session', dependencies: ['usher-errors'] },
);
