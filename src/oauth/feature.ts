import type { FastifyBaseLogger } from 'fastify';
import type { Feature } from '../features.ts';
import { ConfigError } from '../kernel/settings.ts';
import { createOAuth } from './migrations/2026-11-25-0015-oauth.ts';
import { type Provider, reasonOf } from './providers.ts';
import { oauthRoutes } from './routes.ts';

/**
 * Sign-in with a provider (Google, Microsoft, Apple, GitLab, GitHub, any OpenID Connect issuer):
 * a method of the sign-in core, its identities, and the clean-up of abandoned sign-ins.
 */
export const oauthFeature: Feature = {
  name: 'oauth',
  migrations: { '2026-11-25-0015-oauth': createOAuth },
  housekeeping: ({ oauth, limits }) => Promise.all([oauth.purgeExpired(), limits.oauthStart.purge()]),
  routes: async (app, { services, guard, profile, metrics, config, log }) => {
    await Promise.all(services.oauth.providers.list().map((provider) => discoverAtStart(provider, log)));
    await app.register(oauthRoutes, {
      oauth: services.oauth,
      guard,
      profile,
      metrics,
      core: services.core,
      config,
    });
  },
};

/** How long the start waits for a provider's discovery before going on without it. */
const START_WAIT_MS = 3000;

/**
 * Each provider is discovered as the app starts. One that answers with something that is not its
 * discovery document (a wrong issuer, a 404, not JSON, an issuer that names itself otherwise) is a
 * bad setting: the start stops, naming it. One that cannot be reached (no answer in 3 s, a refused
 * connection, a 5xx) is a warning: it is discovered again at first use.
 */
async function discoverAtStart(provider: Provider, log: FastifyBaseLogger): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<'waited'>((resolve) => {
    timer = setTimeout(() => resolve('waited'), START_WAIT_MS);
  });
  try {
    const outcome = await Promise.race([provider.configuration(), waited]);
    if (outcome === 'waited') warn(provider, log, `no answer in ${START_WAIT_MS / 1000} s`);
  } catch (error) {
    if (!notReached(error)) {
      const setting =
        provider.settings.kind === 'github'
          ? 'OAUTH_GITHUB_URL'
          : `OAUTH_${provider.id.toUpperCase().replaceAll('-', '_')}_ISSUER`;
      throw new ConfigError(
        setting,
        `${provider.settings.issuer} is not a usable issuer: ${reasonOf(error)}`,
      );
    }
    warn(provider, log, reasonOf(error));
  } finally {
    clearTimeout(timer);
  }
}

function warn(provider: Provider, log: FastifyBaseLogger, reason: string): void {
  log.warn(
    { provider: provider.id, issuer: provider.settings.issuer, reason },
    'provider sign-in: the provider could not be reached; it is tried again at first use',
  );
}

/** No answer, or the provider's own failure (5xx): not a wrong setting. */
function notReached(error: unknown): boolean {
  if (!(error instanceof Error)) return true;
  if (error.name === 'TypeError' || error.name === 'TimeoutError' || error.name === 'AbortError') return true;
  const status = (error.cause as { status?: unknown } | undefined)?.status;
  return typeof status === 'number' && status >= 500;
}
