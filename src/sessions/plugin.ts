import cookie from '@fastify/cookie';
import fp from 'fastify-plugin';
import type { Authenticator } from './guard.ts';

/**
 * Sessions for the whole app: cookies set through @fastify/cookie (read by the guard itself, only
 * where a session is looked for), and one check on every route whose config says `auth` (a session,
 * or a staff role), added to those routes alone: the others run no hook for it.
 */
export const sessionPlugin = fp<{ guard: Authenticator }>(
  async (app, { guard }) => {
    // No parsing hook: it would parse every request's Cookie header, which most routes never read.
    await app.register(cookie, { hook: false });
    app.decorateRequest('usherSession', null);
    // A route hook: it runs after every app-wide onRequest hook (CORS's too).
    app.addHook('onRoute', (route) => {
      const auth = route.config?.auth;
      if (auth === undefined) return;
      const check = auth === 'session' ? guard.required : guard.staff[auth];
      route.onRequest = [...[route.onRequest ?? []].flat(), check];
    });
  },
  { name: 'usher-session', dependencies: ['usher-errors'] },
);
