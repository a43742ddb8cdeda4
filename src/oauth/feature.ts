import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.ts';
import { type ExportsOf, feature } from '../feature.ts';
import type { Kernel, KernelUnit } from '../kernel/composition.ts';
import { AddressLimits } from '../kernel/limits.ts';
import { ConfigError } from '../kernel/settings.ts';
import type { MailExports } from '../mail/feature.ts';
import type { SigninExports } from '../signin/feature.ts';
import type { TotpUnit } from '../totp/feature.ts';
import type { UsersExports } from '../users/feature.ts';
import { OAUTH_ERRORS } from './errors.ts';
import { IdentitiesRepository } from './identity-repository.ts';
import { oauthMails } from './mails.ts';
import { createOAuth } from './migrations/2026-11-25-0015-oauth.ts';
import { type Provider, Providers, reasonOf } from './providers.ts';
import { oauthRoutes } from './routes.ts';
import { type OAuthRepositories, OAuthService } from './service.ts';
import { OAuthStatesRepository } from './state-repository.ts';

export interface IdentitiesUnit {
  identities: IdentitiesRepository;
}

/**
 * Sign-in with a provider (Google, Microsoft, Apple, GitLab, GitHub, any OpenID Connect issuer):
 * a method of the sign-in core, its identities, and the clean-up of abandoned sign-ins.
 */
export const oauthFeature = feature({
  name: 'oauth',
  mails: Object.values(oauthMails),
  errors: OAUTH_ERRORS,
  migrations: { '2026-11-25-0015-oauth': createOAuth },
  repositories: (db): IdentitiesUnit => ({ identities: new IdentitiesRepository(db) }),
  build(
    kernel: Kernel<Config, OAuthRepositories & IdentitiesUnit & TotpUnit & KernelUnit, unknown>,
    needs: { signin: SigninExports; mail: MailExports; users: UsersExports },
  ) {
    const { config, repositories, now } = kernel;
    const startLimit = new AddressLimits({
      policy: config.oauth.starts,
      events: repositories.limits,
      now,
      scope: 'oauth-start',
      message: 'Too many provider sign-ins started from this address; try again later.',
    });
    const oauth = new OAuthService({
      providers: new Providers(config.oauth.providers, config.publicUrl, config.oauth.timeoutMs),
      states: new OAuthStatesRepository(kernel.database.db),
      identities: repositories.identities,
      users: repositories.users,
      core: needs.signin.core,
      transaction: kernel.transaction,
      accountMail: needs.mail.accountMail,
      mail: needs.mail.mail,
      emailProven: needs.users.emailProven,
      factorOf: (userId) => repositories.totp.find(userId),
      signup: config.oauth.signup,
      startLimit,
      now,
    });
    return { oauth, startLimit };
  },
  housekeeping: ({ oauth, startLimit }) => Promise.all([oauth.purgeExpired(), startLimit.purge()]),
  routes: async (app, { own, needs, guard, profile, config, log }) => {
    await Promise.all(own.oauth.providers.list().map((provider) => discoverAtStart(provider, log)));
    await app.register(oauthRoutes, {
      oauth: own.oauth,
      guard,
      profile,
      metrics: needs.signin.metrics,
      core: needs.signin.core,
      config,
    });
  },
});

export type OAuthExports = ExportsOf<typeof oauthFeature>;

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
