// Who is calling: a session token from `Authorization: Bearer …` or the session cookie.
import { fastifyCookie } from '@fastify/cookie';
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { Awaitable } from '../shared/awaitable.ts';
import { AppError } from '../shared/errors.ts';
import type { ActiveSession, SessionService } from './service.ts';

/** The roles a route can require beyond a session (CONTRACT "Administration"). */
export type StaffRole = 'support' | 'admin';
const RANK = { user: 0, support: 1, admin: 2 } as const;

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by Authenticator.required on routes that need a signed-in user. */
    usherSession: ActiveSession | null;
  }
  interface FastifyContextConfig {
    /**
     * `session`: the route needs a signed-in user (cookie or Bearer token); `support` or `admin`:
     * a signed-in user with at least that role (else 403 FORBIDDEN).
     */
    auth?: 'session' | StaffRole;
  }
}

export const SESSION_COOKIE = 'usher_session';
/**
 * The device cookie (OWASP's): proof that this client signed in to an account before, so that
 * failures others cause on the account do not keep it out (signin/throttle.ts). Clients without
 * cookies send the same token in the DEVICE_HEADER they were given it in.
 */
export const DEVICE_COOKIE = 'usher_device';
export const DEVICE_HEADER = 'usher-device';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export interface CookiePolicy {
  /** `always`: every cookie is Secure; `auto`: only when the request came over https. */
  secure: 'auto' | 'always';
}

function readBearer(header: string | undefined): string | undefined {
  const match = header && /^Bearer[ ]+([A-Za-z0-9_-]{16,512})\s*$/i.exec(header);
  return match ? match[1] : undefined;
}

/**
 * Browsers attach cookies to cross-site requests, so a cookie-authenticated write must prove it
 * comes from our own origin. Request bodies are JSON only (a cross-site form cannot send that
 * without a CORS preflight, which Usher does not grant), and an Origin or Sec-Fetch-Site header
 * naming another site is refused. Bearer tokens are not ambient, so they need no such check.
 */
function isCrossSite(request: FastifyRequest, allowedOrigins: ReadonlySet<string>): boolean {
  const origin = request.headers.origin;
  if (origin !== undefined && allowedOrigins.has(origin)) return false;
  const site = request.headers['sec-fetch-site'];
  if (site === 'cross-site' || site === 'same-site') return true;
  if (origin === undefined) return false;
  try {
    return new URL(origin).host !== request.headers.host;
  } catch {
    return true; // "null" or garbage: an opaque origin is never ours
  }
}

/** The session the route's `auth: 'session'` check established for this request. */
export function currentSession(request: FastifyRequest): ActiveSession {
  if (!request.usherSession) throw unauthenticated();
  return request.usherSession;
}

const notPermitted = (role: StaffRole) =>
  new AppError(
    'FORBIDDEN',
    `This needs an account with the ${role} role${role === 'support' ? ' or admin' : ''}.`,
  );

const unauthenticated = () =>
  new AppError('UNAUTHENTICATED', 'Sign in first: send the session cookie or a Bearer token.');

export class Authenticator {
  readonly #sessions: SessionService;
  readonly #cookie: CookiePolicy;
  readonly #allowedOrigins: ReadonlySet<string>;

  constructor(deps: {
    sessions: SessionService;
    cookie: CookiePolicy;
    /** The CORS allow-list, whose pages may write with the cookie. */
    allowedOrigins?: readonly string[];
  }) {
    this.#sessions = deps.sessions;
    this.#cookie = deps.cookie;
    this.#allowedOrigins = new Set(deps.allowedOrigins ?? []);
  }

  /**
   * The caller's session, or undefined when the request carries none that is valid: a value when
   * it is known at once (SessionService.resolve), a promise otherwise; a cross-site cookie throws
   * (for writes, or with `everyMethod` for reads too: the staff routes, where even a read is
   * recorded in the audit log and must not be made by another site's link).
   */
  session(request: FastifyRequest, everyMethod = false): Awaitable<ActiveSession | undefined> {
    const bearer = readBearer(request.headers.authorization);
    if (bearer) return this.#sessions.resolve(bearer);
    const header = request.headers.cookie;
    const cookie = header ? fastifyCookie.parse(header)[SESSION_COOKIE] : undefined;
    if (!cookie) return undefined;
    if ((everyMethod || !SAFE_METHODS.has(request.method)) && isCrossSite(request, this.#allowedOrigins)) {
      throw new AppError('FORBIDDEN', 'Cross-site requests cannot use the session cookie.');
    }
    return this.#sessions.resolve(cookie);
  }

  /**
   * The browser's session from its cookie alone (never a Bearer token): what the OpenID Connect
   * provider's pages and checks ask, on navigations a browser makes with its cookies.
   */
  browserSession(cookieHeader: string | undefined): Awaitable<ActiveSession | undefined> {
    const cookie = cookieHeader ? fastifyCookie.parse(cookieHeader)[SESSION_COOKIE] : undefined;
    return cookie ? this.#sessions.resolve(cookie) : undefined;
  }

  /**
   * The onRequest check of every route whose config says `auth: 'session'`: 401 UNAUTHENTICATED
   * (or 403 for a cross-site cookie) before the body is even read, so anonymous callers learn
   * nothing from validation errors. Callback style: a session known at once goes on in this turn.
   */
  readonly required: onRequestHookHandler = (request, reply, done) => this.#require(request, reply, done);

  /** The onRequest check of routes whose config says `auth: 'support'` or `auth: 'admin'`. */
  readonly staff: Readonly<Record<StaffRole, onRequestHookHandler>> = {
    support: (request, reply, done) => this.#require(request, reply, done, 'support'),
    admin: (request, reply, done) => this.#require(request, reply, done, 'admin'),
  };

  #require(
    request: FastifyRequest,
    _reply: FastifyReply,
    done: (error?: Error) => void,
    role?: StaffRole,
  ): void {
    let found: Awaitable<ActiveSession | undefined>;
    try {
      found = this.session(request, role !== undefined);
    } catch (error) {
      done(error as Error);
      return;
    }
    const settle = (session: ActiveSession | undefined) => {
      if (!session) return done(unauthenticated());
      // Known even when refused below: the audit log records who was refused (plugins/audit-context.ts).
      request.usherSession = session;
      // The role as read with the session, at the start of this request.
      if (role && RANK[session.owner.role] < RANK[role]) return done(notPermitted(role));
      done();
    };
    if (found instanceof Promise) found.then(settle, done);
    else settle(found);
  }

  setCookie(request: FastifyRequest, reply: FastifyReply, token: string): void {
    reply.setCookie(SESSION_COOKIE, token, {
      ...this.#attributes(request),
      maxAge: Math.floor(this.#sessions.policy.absoluteTtlMs / 1000),
    });
  }

  /** The device token the client sent: its device cookie, or else the Usher-Device header. */
  deviceToken(request: FastifyRequest): string | undefined {
    const header = request.headers.cookie;
    const cookie = header ? fastifyCookie.parse(header)[DEVICE_COOKIE] : undefined;
    if (cookie) return cookie;
    const sent = request.headers[DEVICE_HEADER];
    return typeof sent === 'string' ? sent : undefined;
  }

  /**
   * Only sign-in routes read it, all under /api, and only from Usher's own pages or apps, so it
   * goes nowhere else and never with a cross-site request.
   */
  setDeviceCookie(request: FastifyRequest, reply: FastifyReply, token: string, maxAgeSeconds: number): void {
    reply.setCookie(DEVICE_COOKIE, token, {
      ...this.#attributes(request),
      path: '/api',
      sameSite: 'strict',
      maxAge: maxAgeSeconds,
    });
  }

  clearCookie(request: FastifyRequest, reply: FastifyReply): void {
    reply.setCookie(SESSION_COOKIE, '', { ...this.#attributes(request), maxAge: 0 });
  }

  #attributes(request: FastifyRequest) {
    const secure = this.#cookie.secure === 'always' || request.protocol === 'https';
    return { path: '/', httpOnly: true, sameSite: 'lax', secure } as const;
  }
}
