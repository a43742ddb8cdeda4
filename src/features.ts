// The composition root (docs/architecture.md): the features Usher is made of, in the order they
// are built. Each is built from the kernel and from the features before it that it needs, and its
// routes are registered in the same order. A new feature, with or without state, is a new folder
// and one line here (`.with(…)`), and the order is type-checked: a feature placed before one it
// needs fails to compile. The server, the CLI and the tests all build through `compose`.

import { Registry } from 'prom-client';
import { adminFeature } from './admin/feature.ts';
import { auditFeature } from './audit/feature.ts';
import { authFeature } from './auth/feature.ts';
import { catalogFeature } from './catalog/feature.ts';
import type { Config } from './config.ts';
import type { Database, MigrationSet } from './db/database.ts';
import { createMigrations } from './db/migrations/index.ts';
import type { AnyFeature } from './feature.ts';
import { healthFeature } from './health/feature.ts';
import { type Clock, Composition, type Logger } from './kernel/composition.ts';
import { keySource } from './kernel/sealing.ts';
import { ConfigError } from './kernel/settings.ts';
import { declaredMails, mailFeature } from './mail/feature.ts';
import { TemplateError } from './mail/operator-templates.ts';
import { MailTemplates } from './mail/templates.ts';
import { mailSigninFeature } from './mail-signin/feature.ts';
import { oauthFeature } from './oauth/feature.ts';
import { oidcFeature } from './oidc/feature.ts';
import { pagesFeature } from './pages/feature.ts';
import { passkeysFeature } from './passkeys/feature.ts';
import { passwordsFeature } from './passwords/feature.ts';
import { recoveryFeature } from './recovery/feature.ts';
import { restFeature } from './rest/feature.ts';
import { sessionsFeature } from './sessions/feature.ts';
import { ErrorTable, serveErrorCodes } from './shared/errors.ts';
import { signinFeature, throttleFeature } from './signin/feature.ts';
import { tokensFeature } from './tokens/feature.ts';
import { totpFeature } from './totp/feature.ts';
import { usersFeature } from './users/feature.ts';
import { webhooksFeature } from './webhooks/feature.ts';

/** The composition root: every built-in feature, in the order they are built and their routes registered. */
export const FEATURES = new Composition<Config>()
  .with(passwordsFeature)
  .with(tokensFeature)
  .with(mailFeature)
  .with(sessionsFeature)
  .with(throttleFeature)
  .with(usersFeature)
  .with(totpFeature)
  .with(signinFeature)
  .with(authFeature)
  .with(passkeysFeature)
  .with(oauthFeature)
  .with(mailSigninFeature)
  .with(oidcFeature)
  .with(adminFeature)
  .with(auditFeature)
  .with(webhooksFeature)
  .with(recoveryFeature)
  .with(catalogFeature)
  .with(restFeature)
  .with(healthFeature)
  .with(pagesFeature);

/** A composition of features, the built-in ones or more (a test adds one with `.with(…)`). */
// biome-ignore lint/suspicious/noExplicitAny: any composition's features.
export type Features = Composition<Config, any, any>;

/** What the built-in features export, by name: the result of `compose`. */
export type Built = ReturnType<typeof FEATURES.build>;

/** The app's features of a composition (its modules are features: `.with` takes only those here). */
export const featuresOf = (features: Features) => features.modules as readonly AnyFeature[];

/** What `compose` takes besides the configuration and the database (all optional). */
export interface ComposeOptions {
  /** The clock every feature reads (tests pass one they can move); Date.now by default. */
  now?: Clock;
  /** Where the features register their metrics (a registry of its own by default). */
  registry?: Registry;
  /** Where background work logs (silent by default: the CLI and tests). */
  log?: Logger;
}

const SILENT: Logger = { child: () => SILENT, info() {}, warn() {}, error() {} };

/**
 * Builds the features' services for one database and configuration: the app, the admin CLI and
 * tests share it, so all apply the same rules (validation, hashing, session revocation).
 */
export function compose<C extends Features = typeof FEATURES>(
  config: Config,
  database: Database,
  options: ComposeOptions = {},
  features: C = FEATURES as unknown as C,
): ReturnType<C['build']> {
  // What the services throw is answered with the statuses these features declare.
  serveErrorCodes(ErrorTable.of(featuresOf(features)));
  return features.build({
    config,
    database,
    now: options.now ?? Date.now,
    registry: options.registry ?? new Registry(),
    log: options.log ?? SILENT,
    // TOTP secrets, client secrets and the provider's keys are sealed under one key.
    sealingKey: keySource(config.encryptionKey, config.databaseUrl),
    environment: config.environment,
  }) as ReturnType<C['build']>;
}

/**
 * Every migration: the schema's history in db/migrations/ (up to 2026-11-24), then each
 * feature's. Two with one name is a programming error, stopped at start.
 */
export function schemaMigrations(features: Features = FEATURES): MigrationSet {
  return (dialect) => {
    const all = createMigrations(dialect);
    for (const feature of featuresOf(features)) {
      for (const [name, migration] of Object.entries(feature.migrations ?? {})) {
        if (name in all) throw new Error(`two migrations are named ${name} (feature ${feature.name})`);
        all[name] = migration(dialect);
      }
    }
    return all;
  };
}

/** Every mail the features send, each declared in its feature's mails.ts (decision 380). */
export const MAILS = declaredMails(FEATURES.modules);

/**
 * The operator's mail templates (MAIL_TEMPLATES_DIR) checked against the features' mails:
 * loadConfig checks all it can without knowing the mails (decision 381), this the rest, with the
 * same ConfigError naming the file. The server and the CLI call it right after loadConfig, before
 * the database.
 */
export function checkMailTemplates(config: Config, features: Features = FEATURES): void {
  try {
    new MailTemplates(declaredMails(features.modules), config.mail.templates);
  } catch (error) {
    if (error instanceof TemplateError) throw new ConfigError('MAIL_TEMPLATES_DIR', error.message);
    throw error;
  }
}

/** One round of every feature's housekeeping (the app runs one a minute; tests call it). */
export async function housekeeping(built: object, features: Features = FEATURES): Promise<void> {
  const exports = built as Record<string, unknown>;
  await Promise.all(
    featuresOf(features).map((feature) => feature.housekeeping?.(exports[feature.name], exports)),
  );
}
