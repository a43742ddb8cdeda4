// The feature contract (docs/architecture.md): what a feature folder's feature.ts declares. The
// kernel's `Module` (kernel/composition.ts) is the part that builds: the repositories a feature adds
// to the unit of work, its journal sink, its metrics and its services. A `Feature` adds what the
// app serves: migrations, routes and their OpenAPI shapes, housekeeping and background work. This
// file holds types and one identity function only, so a feature importing it imports no other.

import type { Migration } from 'kysely/migration';
import type { Config } from './config.ts';
import type { Database, DialectName } from './db/database.ts';
import type { SchemaReadiness } from './db/schema-readiness.ts';
import type { Clock, Module } from './kernel/composition.ts';
import type { MailDefinition } from './mail/index.ts';
import type { FeaturePageTexts, PageTextSet } from './pages/i18n.ts';
import type { Metrics } from './plugins/metrics.ts';
import type { WireProfile } from './profiles/index.ts';
import type { Authenticator } from './sessions/guard.ts';
import type { ErrorDeclarations } from './shared/errors.ts';
import type { App } from './shared/fastify.ts';
import type { Component } from './shared/schemas.ts';

/** What a feature's routes and background work are given: the app's parts, and its own services. */
export interface FeatureContext<Exports = unknown, Needs = unknown> {
  config: Config;
  guard: Authenticator;
  profile: WireProfile;
  metrics: Metrics;
  database: Database;
  schema: SchemaReadiness;
  log: App['log'];
  now: Clock;
  /** Every group of page texts: pages/'s own and the features' (`pageTexts` below), composed at start. */
  pageTexts: PageTextSet;
  /** What the feature's `build` returned. */
  own: Exports;
  /** What the features it needs exported (its `build`'s second parameter). */
  needs: Needs;
}

export interface Feature<
  N extends string = string,
  Needs = unknown,
  E = unknown,
  Own extends object = object,
  U extends object = object,
  O = unknown,
  S = unknown,
> extends Module<Config, N, Needs, E, Own, U, O, S> {
  /**
   * The migrations the feature adds (kept in its folder, frozen once landed), by date-prefixed
   * name; its tables join db/schema.ts's `Tables` by module augmentation, in the feature's folder.
   */
  migrations?: Readonly<Record<string, (dialect: DialectName) => Migration>>;
  /** Registers the feature's routes (each feature's plugin is encapsulated). */
  routes?(app: App, context: FeatureContext<E, Needs>): PromiseLike<unknown>;
  /** The named shapes the routes reference, for the OpenAPI document's components. */
  components?(profile: WireProfile): Component[];
  /** Background clean-up of what expires (every minute, on every instance, never in a request). */
  housekeeping?(own: E, needs: Needs): Promise<unknown>;
  /** Work that runs in the background from the start until the app closes (before the database). */
  background?(context: FeatureContext<E, Needs>): { stop(): Promise<void> };
  /** The mails the feature sends, with their texts in every language (its mails.ts, mail-texts.ts). */
  mails?: readonly MailDefinition[];
  /** The error codes the feature declares, its errors.ts's (shared/errors.ts ErrorCodes). */
  errors?: ErrorDeclarations;
  /** The texts of the pages the feature drives, by group, in every language (its page-texts.ts). */
  pageTexts?: FeaturePageTexts;
}

// biome-ignore lint/suspicious/noExplicitAny: a feature of any shape, as the app goes over them.
export type AnyFeature = Feature<string, any, any, any, any, any, any>;

/** What a feature exports to the features built after it (what its `build` returns). */
// biome-ignore lint/suspicious/noExplicitAny: matches a feature of any shape.
export type ExportsOf<F> = F extends Feature<any, any, infer E, any, any, any, any> ? E : never;

/** Declares a feature, its types inferred from its `build` (the second parameter: what it needs). */
export const feature = <N extends string, Needs, E, Own extends object, U extends object, O, S>(
  f: Feature<N, Needs, E, Own, U, O, S>,
) => f;
