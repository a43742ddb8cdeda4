// Usher's login and consent pages for the provider, under /oidc/interaction/{uid}. Signing in is
// the sign-in core's, through the JSON API the page calls (password with the TOTP step, passkeys,
// providers): the page ends with a Usher session, and this route turns the browser's session into
// the provider's login, with `auth_time` and `amr` as that session was signed in. A browser that
// already has a session is not asked again (unless prompt=login, max_age or a hint wants a new
// sign-in). Consent: never for first-party clients; once per scope set for the others.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { InteractionResults, default as Provider } from 'oidc-provider';
import { Type } from 'typebox';
import { languageHeaders, type PageTextSet, pageLocale } from '../pages/index.ts';
import type { ActiveSession, SessionService } from '../sessions/service.ts';
import type { Awaitable } from '../shared/awaitable.ts';
import { AppError } from '../shared/errors.ts';
import type { OidcLoginBaselinesRepository } from './baseline-repository.ts';
import type { OidcConsentsRepository } from './client-repository.ts';
import type { ClientRegistry } from './clients.ts';
import { oidcPageTexts } from './page-texts.ts';
import { errorPage, interactionPage } from './pages.ts';
import { INTERACTION_PATH, type OidcHost } from './provider.ts';

type Details = Awaited<ReturnType<Provider['interactionDetails']>>;

/** A prompt that asks for a sign-in made during this interaction, not any earlier one. */
const FRESH_REASONS = new Set([
  'login_prompt',
  'id_token_hint',
  'claims_id_token_sub_value',
  'essential_acr',
  'essential_acrs',
]);
const UID = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' });

export interface InteractionDeps {
  host: OidcHost;
  sessions: SessionService;
  clients: ClientRegistry;
  consents: OidcConsentsRepository;
  baselines: OidcLoginBaselinesRepository;
  browserSession(cookieHeader: string | undefined): Awaitable<ActiveSession | undefined>;
  now: () => number;
  /** Every group of page texts (the sign-in page takes pages/'s `common` with its own). */
  pageTexts: PageTextSet;
}

/** Why the page cannot go on, as a page: the browser came without the interaction's cookie, or too late. */
class Gone extends Error {}

export const interactionRoutes: FastifyPluginAsyncTypebox<InteractionDeps> = async (app, deps) => {
  const { host } = deps;
  // Rendered in every language once, at start-up, like pages/'s pages.
  const page = interactionPage(deps.pageTexts);

  async function detailsOf(
    request: FastifyRequest,
    reply: FastifyReply,
  ): Promise<{ provider: Provider; details: Details }> {
    if (!host.available)
      throw new AppError(
        'UNAVAILABLE',
        'The OpenID Connect provider is not available: ENCRYPTION_KEY is not set.',
      );
    const provider = await host.provider();
    try {
      return { provider, details: await provider.interactionDetails(request.raw, reply.raw) };
    } catch (error) {
      if ((error as { name?: string }).name === 'SessionNotFound') throw new Gone();
      throw error;
    }
  }

  /**
   * The browser's Usher session, if it may stand for this interaction's login. When the app wants
   * a new sign-in (prompt=login, a hint, an essential acr), only a session created after the
   * browser first came to this page counts, and never the one it had then: both are noted on the
   * server at that first visit, in milliseconds (the interaction's own creation time is kept in
   * whole seconds, which could not tell a sign-in just before the request from one just after).
   * Nothing the browser sends but its session decides. max_age: a session older than it never
   * stands, whenever it was made.
   */
  async function usableSession(
    request: FastifyRequest,
    details: Details,
  ): Promise<ActiveSession | undefined> {
    const session = await deps.browserSession(request.headers.cookie);
    if (details.prompt.reasons.some((reason) => FRESH_REASONS.has(reason))) {
      const now = deps.now();
      const baseline = await deps.baselines.note(details.uid, {
        seenMs: now,
        sessionId: session?.id ?? null,
        expiresMs: details.exp * 1000,
      });
      if (!session || session.id === baseline.sessionId || session.createdAt.getTime() <= baseline.seenMs)
        return undefined;
    }
    if (!session) return undefined;
    const maxAge = details.params.max_age;
    if (maxAge !== undefined && deps.now() - session.createdAt.getTime() > Number(maxAge) * 1000)
      return undefined;
    return session;
  }

  async function loginResult(session: ActiveSession): Promise<InteractionResults> {
    return {
      login: {
        accountId: session.userId.toString(),
        amr: deps.sessions.methodsOf(session),
        ts: Math.floor(session.createdAt.getTime() / 1000),
        remember: true,
      },
    };
  }

  /** The consent this interaction needs, as the set of items remembered per person and client. */
  function asked(details: Details): string[] {
    const missing = details.prompt.details as {
      missingOIDCScope?: string[];
      missingResourceScopes?: Record<string, string[]>;
    };
    return [
      ...(missing.missingOIDCScope ?? []),
      ...Object.entries(missing.missingResourceScopes ?? {}).flatMap(([resource, scopes]) =>
        scopes.map((scope) => `${resource}#${scope}`),
      ),
    ];
  }

  async function grant(provider: Provider, details: Details): Promise<InteractionResults> {
    const accountId = details.session?.accountId;
    const clientId = String(details.params.client_id);
    const existing = details.grantId ? await provider.Grant.find(details.grantId) : undefined;
    const grant = existing ?? new provider.Grant({ accountId, clientId });
    const missing = details.prompt.details as {
      missingOIDCScope?: string[];
      missingOIDCClaims?: string[];
      missingResourceScopes?: Record<string, string[]>;
    };
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    for (const [resource, scopes] of Object.entries(missing.missingResourceScopes ?? {}))
      grant.addResourceScope(resource, scopes.join(' '));
    return { consent: { grantId: await grant.save() } };
  }

  /** Consent that needs no page: a first-party client, or everything asked was agreed to before. */
  async function consentNeedsNoPage(details: Details): Promise<boolean> {
    const client = await deps.clients.metadata(String(details.params.client_id));
    if (!client) return false;
    if (client.usher_first_party) return true;
    // prompt=consent asks again, whatever was agreed before.
    if (
      String(details.params.prompt ?? '')
        .split(' ')
        .includes('consent')
    )
      return false;
    const accountId = details.session?.accountId;
    if (!accountId) return false;
    const agreed = await deps.consents.find(BigInt(accountId), client.client_id);
    return asked(details).every((item) => agreed.has(item));
  }

  function gonePage(request: FastifyRequest, reply: FastifyReply) {
    const locale = pageLocale(request.headers['accept-language']);
    languageHeaders(reply, locale);
    return reply
      .code(400)
      .type('text/html; charset=utf-8')
      .send(errorPage(locale, 'interaction_expired', oidcPageTexts[locale].oidc.expired, 'signInAgain'));
  }

  const pageConfig = { page: true, noStore: true } as const;

  app.get(
    `${INTERACTION_PATH}/:uid`,
    {
      schema: {
        hide: true,
        params: Type.Object({ uid: UID }),
        // The provider sign-in's landing (?error=CODE) comes back here; the page reads it.
        querystring: Type.Object({ error: Type.Optional(Type.String({ maxLength: 64 })) }),
      },
      config: pageConfig,
    },
    async (request, reply) => {
      let found: { provider: Provider; details: Details };
      try {
        found = await detailsOf(request, reply);
      } catch (error) {
        if (error instanceof Gone) return gonePage(request, reply);
        throw error;
      }
      const { provider, details } = found;
      if (details.uid !== request.params.uid) return gonePage(request, reply);
      let result: InteractionResults | undefined;
      if (details.prompt.name === 'login') {
        const session = await usableSession(request, details);
        if (session) result = await loginResult(session);
      } else if (details.prompt.name === 'consent' && (await consentNeedsNoPage(details))) {
        result = await grant(provider, details);
      }
      if (result) {
        const to = await provider.interactionResult(request.raw, reply.raw, result, {
          mergeWithLastSubmission: true,
        });
        return reply.redirect(to, 303);
      }
      // The app may say which languages it wants the page in (OpenID Connect's ui_locales) before the browser does.
      const asked = typeof details.params.ui_locales === 'string' ? details.params.ui_locales.split(' ') : [];
      const locale = pageLocale(request.headers['accept-language'], asked.slice(0, 10));
      languageHeaders(reply, locale);
      return reply.type('text/html; charset=utf-8').send(page.in(locale));
    },
  );

  app.get(
    `${INTERACTION_PATH}/:uid/details`,
    {
      schema: { hide: true, params: Type.Object({ uid: UID }) },
      config: { noStore: true },
    },
    async (request, reply) => {
      const { details } = await detailsOrFail(request, reply);
      const client = await deps.clients.metadata(String(details.params.client_id));
      const accountId = details.session?.accountId;
      const session = accountId ? await deps.browserSession(request.headers.cookie) : undefined;
      return {
        prompt: details.prompt.name,
        client: { name: client?.client_name ?? String(details.params.client_id) },
        scopes: details.prompt.name === 'consent' ? asked(details) : [],
        loginHint: typeof details.params.login_hint === 'string' ? details.params.login_hint : undefined,
        signedInAs: session && session.userId.toString() === accountId ? session.owner.email : undefined,
      };
    },
  );

  async function detailsOrFail(request: FastifyRequest<{ Params: { uid: string } }>, reply: FastifyReply) {
    let found: { provider: Provider; details: Details };
    try {
      found = await detailsOf(request, reply);
    } catch (error) {
      if (error instanceof Gone) throw expired();
      throw error;
    }
    if (found.details.uid !== request.params.uid) throw expired();
    return found;
  }

  const expired = () =>
    new AppError(
      'INVALID_TOKEN',
      'This sign-in has expired or belongs to another browser; start again from the app.',
    );

  /** Writes only from Usher's own page: a cross-site request (a form elsewhere) is refused. */
  function sameOrigin(request: FastifyRequest): void {
    const site = request.headers['sec-fetch-site'];
    const origin = request.headers.origin;
    let foreign = site === 'cross-site' || site === 'same-site';
    if (!foreign && origin !== undefined) {
      try {
        foreign = new URL(origin).host !== request.headers.host;
      } catch {
        foreign = true;
      }
    }
    if (foreign) throw new AppError('FORBIDDEN', 'Cross-site requests cannot answer a sign-in.');
  }

  app.post(
    `${INTERACTION_PATH}/:uid/consent`,
    {
      schema: {
        hide: true,
        params: Type.Object({ uid: UID }),
        body: Type.Object(
          { decision: Type.Union([Type.Literal('allow'), Type.Literal('deny')]) },
          { additionalProperties: false },
        ),
      },
      config: { noStore: true },
    },
    async (request, reply) => {
      sameOrigin(request);
      const { provider, details } = await detailsOrFail(request, reply);
      if (details.prompt.name !== 'consent')
        throw new AppError('VALIDATION_FAILED', 'This sign-in asks for no consent.');
      const accountId = details.session?.accountId;
      const session = await deps.browserSession(request.headers.cookie);
      if (!accountId || session?.userId.toString() !== accountId)
        throw new AppError('UNAUTHENTICATED', 'Sign in first: this consent is for the signed-in account.');
      let result: InteractionResults;
      if (request.body.decision === 'deny') {
        result = { error: 'access_denied', error_description: 'The person did not allow the app.' };
      } else {
        await deps.consents.add(BigInt(accountId), String(details.params.client_id), asked(details));
        result = await grant(provider, details);
      }
      const to = await provider.interactionResult(request.raw, reply.raw, result, {
        mergeWithLastSubmission: true,
      });
      return { location: to };
    },
  );

  app.post(
    `${INTERACTION_PATH}/:uid/cancel`,
    {
      schema: { hide: true, params: Type.Object({ uid: UID }) },
      config: { noStore: true },
    },
    async (request, reply) => {
      sameOrigin(request);
      const { provider } = await detailsOrFail(request, reply);
      const to = await provider.interactionResult(
        request.raw,
        reply.raw,
        { error: 'access_denied', error_description: 'The person cancelled the sign-in.' },
        { mergeWithLastSubmission: false },
      );
      return { location: to };
    },
  );
};
