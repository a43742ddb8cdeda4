// The features Usher is made of, in the order their routes are registered. A feature folder
// exports one `Feature` (its feature.ts) saying what it adds to the app: its routes, the named
// OpenAPI shapes they reference, and its background clean-up. app.ts goes over this list; a new
// feature (a new sign-in method, say) is a new folder and one line here.
import { authFeature } from './auth/feature.ts';
import { catalogFeature } from './catalog/feature.ts';
import type { Config } from './config.ts';
import type { Database } from './db/database.ts';
import type { SchemaReadiness } from './db/schema-readiness.ts';
import { healthFeature } from './health/feature.ts';
import { mfaFeature } from './mfa/feature.ts';
import { pagesFeature } from './pages/feature.ts';
import { passkeysFeature } from './passkeys/feature.ts';
import type { Metrics } from './plugins/metrics.ts';
import type { WireProfile } from './profiles/index.ts';
import { recoveryFeature } from './recovery/feature.ts';
import { restFeature } from './rest/feature.ts';
import type { Services } from './services.ts';
import { sessionsFeature } from './sessions/feature.ts';
import type { Authenticator } from './sessions/guard.ts';
import type { App } from './shared/fastify.ts';
import type { Component } from './shared/schemas.ts';
import { signinFeature } from './signin/feature.ts';
import { usersFeature } from './users/feature.ts';

/** What a feature's routes are given: the built services and what every route shares. */
export interface FeatureContext {
  config: Config;
  services: Services;
  guard: Authenticator;
  profile: WireProfile;
  metrics: Metrics;
  database: Database;
  schema: SchemaReadiness;
}

export interface Feature {
  /** The folder's name, for logs. */
  name: string;
  /** Registers the feature's routes (each feature's plugin is encapsulated). */
  routes?(app: App, context: FeatureContext): PromiseLike<unknown>;
  /** The named shapes the routes reference, for the OpenAPI document's components. */
  components?(profile: WireProfile): Component[];
}

export const FEATURES: readonly Feature[] = [
  usersFeature,
  authFeature,
  signinFeature,
  sessionsFeature,
  passkeysFeature,
  mfaFeature,
  recoveryFeature,
  catalogFeature,
  restFeature,
  healthFeature,
  pagesFeature,
];
