import type { Feature } from '../features.ts';
import { createOAuth } from './migrations/2026-11-25-0015-oauth.ts';
import { reasonOf } from './providers.ts';
import { oauthRoutes } from './routes.ts';

/**
 * Sign-in with a provider (Google, Microsoft, Apple, GitLab, GitHub, any OpenID Connect issuer):
 * a method of the sign-in core, its identities, and the clean-up of abandoned sign-ins. Each
 * provider is discovered at the start in the background; one that cannot be reached is a warning,
 * and is discovered again at first use.
 */
export const oauthFeature: Feature = {
  name: 'oauth',
  migrations: { '2026-11-25-0015-oauth': createOAuth },
  housekeeping: ({ oauth }) => oauth.purgeExpired(),
  routes: (app, { services, guard, profile, metrics, config }) =>
    app.register(oauthRoutes, {
      oauth: services.oauth,
      guard,
      profile,
      metrics,
      core: services.core,
      config,
    }),
  background: ({ services, log }) => {
    for (const provider of services.oauth.providers.list())
      provider
        .configuration()
        .catch((error: unknown) =>
          log.warn(
            { provider: provider.id, issuer: provider.settings.issuer, reason: reasonOf(error) },
            'provider sign-in: the provider could not be discovered; it is tried again at first use',
          ),
        );
    return { stop: async () => {} };
  },
};
