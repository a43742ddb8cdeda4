import cookie, { type CookieSerializeOptions, fastifyCookie } from '@fastify/cookie';
import type { FastifyReply } from 'fastify';
import fp from 'fastify-plugin';
import type { Authenticator } from './guard.ts';

/** The cookies an answer has set, by name, domain and path, each as its Set-Cookie line. */
const setByReply = new WeakMap<FastifyReply, Map<string, string>>();

/**
 * `reply.setCookie`, as @fastify/cookie's does it: a cookie set again in the same answer (same
 * name, domain and path) is sent once, with its last value; Set-Cookie lines set by other means
 * are kept, before these. Written to the headers at once rather than by an onSend hook, so that
 * the routes that set no cookie (nearly all, the lookups among them) run no hook for it; an error
 * answer keeps them, as Fastify keeps the headers set before the error.
 */
function setCookie(
  this: FastifyReply,
  name: string,
  value: string,
  options: CookieSerializeOptions = {},
): FastifyReply {
  // No secret is configured, so @fastify/cookie could not sign either.
  if (options.signed) throw new Error('Signed cookies are not set up.');
  const { secure, signed: _signed, ...attributes } = options;
  const opts = {
    sameSite: 'lax' as const,
    ...attributes,
    secure: secure === 'auto' ? this.request.protocol === 'https' : secure,
  };
  const line = fastifyCookie.serialize(name, value, opts);
  let cookies = setByReply.get(this);
  if (!cookies) {
    cookies = new Map();
    setByReply.set(this, cookies);
  }
  const ours = new Set(cookies.values());
  const others = ([] as unknown[])
    .concat(this.getHeader('set-cookie') ?? [])
    .map(String)
    .filter((other) => !ours.has(other));
  cookies.set(`${name};${opts.domain};${opts.path || '/'}`, line);
  const lines = [...others, ...cookies.values()];
  this.removeHeader('set-cookie');
  this.header('set-cookie', lines.length === 1 ? lines[0] : lines);
  return this;
}

/**
 * Sessions for the whole app: cookies set by `reply.setCookie` (read by the guard itself, only
 * where a session is looked for), and one check on every route whose config says `auth` (a session,
 * or a staff role), added to those routes alone: the others run no hook for it.
 */
export const sessionPlugin = fp<{ guard: Authenticator }>(
  async (app, { guard }) => {
    // @fastify/cookie's parse and serialize (fastifyCookie.parse/serialize) work once the plugin
    // has been registered somewhere (it loads its `cookie` module then), but registered on the app
    // it adds an onSend hook to every route, which ran on every answer to write the cookies of the
    // few that set one. So it is registered in a scope of its own, which serves no route, and
    // reply.setCookie above writes each cookie as it is set. No parsing hook either: it would
    // parse every request's Cookie header, which most routes never read.
    await app.register(async (scope) => {
      await scope.register(cookie, { hook: false });
    });
    app.decorateReply('setCookie', setCookie);
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
