// The features Usher is made of, in the order their routes are registered. A feature folder
// exports one `Feature` (its feature.ts) saying what it adds to the app: its routes, the named
// OpenAPI shapes they reference, and its background clean-up. app.ts goes over this list; a new
// feature (a new sign-in method, say) is a new folder and one line here.

import type { FastifyBaseLogger } from 'fastify';
import type { Migration } from 'kysely/migration';
import type { Registry } from 'prom-client';
import { adminFeature } from './admin/feature.ts';
import { auditFeature } from './audit/feature.ts';
import { authFeature } from './auth/feature.ts';
import { catalogFeature } from './catalog/feature.ts';
import type { Config } from './config.ts';
import type { Database, DialectName, MigrationSet } from './db/database.ts';
import { createMigrations } from './db/migrations/index.ts';
import type { SchemaReadiness } from './db/schema-readiness.ts';
import { healthFeature } from './health/feature.ts';
import { mailFeature } from './mail/feature.ts';
import { mailSigninFeature } from './mail-signin/feature.ts';
import { oauthFeature } from './oauth/feature.ts';
import { oidcFeature } from './oidc/feature.ts';
import { pagesFeature } from './pages/feature.ts';
import { passkeysFeature } from './passkeys/feature.ts';
import { passwordsFeature } from './passwords/feature.ts';
import type { MetricObservers, Metrics } from './plugins/metrics.ts';
import type { WireProfile } from './profiles/index.ts';
import { recoveryFeature } from './recovery/feature.ts';
import { restFeature } from './rest/feature.ts';
import type { Services } from './services.ts';
import { sessionsFeature } from './sessions/feature.ts';
import type { Authenticator } from './sessions/guard.ts';
import type { ErrorDeclarations } from './shared/errors.ts';
import type { App } from './shared/fastify.ts';
import type { Component } from './shared/schemas.ts';
import { signinFeature } from './signin/feature.ts';
import { totpFeature } from './totp/feature.ts';
import { usersFeature } from './users/feature.ts';
import { webhooksFeature } from './webhooks/feature.ts';

/** What a feature's routes are given: the built services and what every route shares. */
export interface FeatureContext {
  config: Config;
  services: Services;
  guard: Authenticator;
  profile: WireProfile;
  metrics: Metrics;
  database: Database;
  schema: SchemaReadiness;
  log: FastifyBaseLogger;
}

export interface Feature {
  /** The folder's name, for logs. */
  name: string;
  /**
   * The migrations the feature adds (kept in its folder, frozen once landed), by date-prefixed
   * name; its tables join db/schema.ts's `Tables` by module augmentation, in the feature's folder.
   */
  migrations?: Readonly<Record<string, (dialect: DialectName) => Migration>>;
  /** Registers the feature's routes (each feature's plugin is encapsulated). */
  routes?(app: App, context: FeatureContext): PromiseLike<unknown>;
  /** The error codes the feature declares, its errors.ts's (shared/errors.ts ErrorCodes). */
  errors?: ErrorDeclarations;
  /** The named shapes the routes reference, for the OpenAPI document's components. */
  components?(profile: WireProfile): Component[];
  /**
   * Registers the feature's metric families, before the services are built: it returns the
   * observers the services are built with (and the routes count with); `services` is for what a
   * gauge reads at each scrape.
   */
  metrics?(registry: Registry, services: () => Services): Partial<MetricObservers>;
  /** Background clean-up of what expires (every minute, on every instance, never in a request). */
  housekeeping?(services: Services): Promise<unknown>;
  /** Work that runs in the background from the start until the app closes (before the database). */
  background?(context: FeatureContext): { stop(): Promise<void> };
}

export const FEATURES: readonly Feature[] = [
  passwordsFeature,
  mailFeature,
  usersFeature,
  signinFeature,
  authFeature,
  sessionsFeature,
  passkeysFeature,
  totpFeature,
  oauthFeature,
  mailSigninFeature,
  oidcFeature,
  adminFeature,
  auditFeature,
  webhooksFeature,
  recoveryFeature,
  catalogFeature,
  restFeature,
  healthFeature,
  pagesFeature,
];

/**
 * Every migration: the schema's history in db/migrations/ (up to 2026-11-24), then each
 * feature's. Two with one name is a programming error, stopped at start.
 */
export function schemaMigrations(features: readonly Feature[] = FEATURES): MigrationSet {
  return (dialect) => {
    const all = createMigrations(dialect);
    for (const feature of features) {
      for (const [name, migration] of Object.entries(feature.migrations ?? {})) {
        if (name in all) throw new Error(`two migrations are named ${name} (feature ${feature.name})`);
        all[name] = migration(dialect);
      }
    }
    return all;
  };
}

/** One round of every feature's housekeeping (the app runs one a minute; tests call it). */
export async function housekeeping(
  services: Services,
  features: readonly Feature[] = FEATURES,
): Promise<void> {
  await Promise.all(features.map((feature) => feature.housekeeping?.(services)));
}
