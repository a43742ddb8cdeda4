// How the features are put together (docs/architecture.md). Each feature is one module: the
// repositories it adds to the unit of work, the metrics it registers, the journal sink it writes,
// and a `build` that makes its services from the kernel and from the features it needs. A
// composition is the features in the order they are built, written as a chain of `.with(…)`
// calls: each call is type-checked against what the features before it export and what the unit
// of work holds, so a feature placed before one it needs fails to compile, naming what is missing.
// No container, no decorators, no service patched after construction: `build` runs once per
// feature, in that order, and is handed what the earlier ones returned.
import type { Kysely } from 'kysely';
import type { Registry } from 'prom-client';
import type { Database } from '../db/database.ts';
import type { Tables } from '../db/schema.ts';
import { AUTOCOMMIT, type CommitHooks, type InTransaction, inTransaction } from '../db/transactions.ts';
import { Signal } from '../shared/signal.ts';
import { Journal, type JournalSink } from './journal.ts';
import { LimitEventsRepository } from './limits-repository.ts';
import type { Env } from './settings.ts';

export type Clock = () => number;

/** The kernel's own part of every unit of work. */
export interface KernelUnit {
  /** Records account events with the change they are about (kernel/journal.ts). */
  journal: Journal;
  /** Address and account limits' events (kernel/limits.ts). */
  limits: LimitEventsRepository;
}

/** What a feature's repositories are bound to: one transaction (or autocommit) and its hooks. */
export interface Binding {
  readonly commit: CommitHooks;
  /** PostgreSQL: row locks (SELECT … FOR UPDATE) and its dialect's statements. */
  readonly postgres: boolean;
  /** The journal's sinks in the order they write (the sign-in grant folds them into its statement). */
  readonly sinks: readonly JournalSink[];
  /**
   * The whole unit of work these repositories are part of, once every feature added its own: for
   * a repository whose writes carry another feature's along (read when used, not when bound).
   */
  readonly unit: () => object;
}

/** What the app (or the CLI, or a test) gives every composition besides the configuration. */
export interface Platform<Config> {
  readonly config: Config;
  readonly database: Database;
  /** The clock every feature reads; tests pass one they can move. */
  readonly now: Clock;
  /** The metrics registry the features register their families on (a throwaway one in the CLI). */
  readonly registry: Registry;
  /** Where a feature's background work logs (pino's or Fastify's logger; a silent one in the CLI). */
  readonly log: Logger;
  /**
   * The key secrets are sealed under (TOTP secrets, client secrets, the provider's keys, webhook
   * secrets: kernel/sealing.ts), one for every feature; undefined where none is set.
   */
  readonly sealingKey: () => Buffer | undefined;
  /**
   * The environment as config.ts was given it, for the sections of features outside the built-in
   * set (their `settings`); config.ts stays the only reader of process.env.
   */
  readonly environment: Env;
}

/** The part of a logger the features use. */
export interface Logger {
  child(bindings: Record<string, unknown>): Logger;
  info(object: unknown, message?: string): void;
  warn(object: unknown, message?: string): void;
  error(object: unknown, message?: string): void;
}

/** What `build` is given: the platform, the unit of work, and the feature's own metrics and signal. */
export interface Kernel<Config, Unit, Observers, Settings = unknown> extends Platform<Config> {
  /** The feature's own settings section, as its `settings` read and checked it. */
  readonly settings: Settings;
  readonly postgres: boolean;
  /** The unit of work's repositories outside a transaction: each statement commits on its own. */
  readonly repositories: Unit & KernelUnit;
  /** Runs work in one transaction, with the unit of work's repositories bound to it. */
  readonly transaction: InTransaction<Unit & KernelUnit>;
  /** What the feature's metrics (its `metrics`) returned: the observers its services report to. */
  readonly observe: Observers;
  /** Notified after a commit that recorded work for this feature's background loop. */
  readonly due: Signal;
  /**
   * Every feature of the composition, in order: for a feature that gathers what the others
   * declare (the mail feature, their mails), as the app gathers their routes.
   */
  readonly features: readonly AnyModule<Config>[];
  /** Called with each account event once its change committed (the account metrics listen). */
  onAccountEvent(listener: (type: string, details?: Readonly<Record<string, unknown>>) => void): void;
}

/**
 * One feature's part in the composition. `Needs` is what it uses of the features built before it
 * (by their names), `Exports` what it offers to those after it, `Own` the repositories it adds to
 * the unit of work, `Unit` the unit of work its transactions use (its own and others'), and
 * `Observers` what its metrics give its services.
 */
export interface Module<
  Config,
  Name extends string = string,
  Needs = unknown,
  Exports = unknown,
  Own extends object = object,
  Unit extends object = object,
  Observers = unknown,
  Settings = unknown,
> {
  readonly name: Name;
  /**
   * Reads and checks the feature's settings section from the environment (kernel/settings.ts's
   * readers): every feature's is read before any is built, so a wrong setting stops the start.
   */
  settings?(env: Env): Settings;
  /** The repositories the feature adds to every unit of work, bound to its transaction. */
  repositories?(db: Kysely<Tables>, binding: Binding): Own;
  /** The journal's sink the feature writes (audit, webhooks), given the feature's signal. */
  sink?(config: Config, due: Signal): JournalSink;
  /** Registers the feature's metric families; `built` gives its exports, for what a gauge reads at a scrape. */
  metrics?(registry: Registry, built: () => Exports): Observers;
  /** Builds the feature's services. */
  build?(kernel: Kernel<Config, Unit, Observers, Settings>, needs: Needs): Exports;
}

// biome-ignore lint/suspicious/noExplicitAny: a list of modules of every shape.
export type AnyModule<Config> = Module<Config, string, any, any, any, any, any, any>;

/** What `with` needs as a second argument when the order is wrong: nothing when it is right. */
type Ordered<Built, Needs> = [Built] extends [Needs]
  ? []
  : [builtBeforeItNeeds: Exclude<keyof Needs, keyof Built>];

/** What `build` needs as a second argument when a repository is missing: nothing when none is. */
type Complete<Unit, Required> = [Unit] extends [Required]
  ? []
  : [unitOfWorkLacks: Exclude<keyof Required, keyof Unit>];

/**
 * The features built so far (by name, their exports), the repositories they add to the unit of
 * work, and the repositories their transactions use. Services are built in order; repositories
 * have none (each is bound to a transaction, and needs nothing else), so a feature's transactions
 * may use a repository of a feature built after it, and `build` checks that every one exists.
 */
export class Composition<
  Config,
  Built extends object = object,
  Unit extends object = object,
  Required extends object = object,
> {
  readonly modules: readonly AnyModule<Config>[];

  constructor(modules: readonly AnyModule<Config>[] = []) {
    this.modules = modules;
  }

  /** The composition with `module` built after the ones before it. */
  with<N extends string, Needs, E, Own extends object, U extends object, O, S>(
    module: Module<Config, N, Needs, E, Own, U, O, S>,
    ..._order: Ordered<Built, Needs>
  ): Composition<Config, Built & { readonly [K in N]: E }, Unit & Own, Required & U> {
    if (this.modules.some((m) => m.name === module.name))
      throw new Error(`two features are named ${module.name}`);
    return new Composition([...this.modules, module as AnyModule<Config>]);
  }

  /** Every feature's settings section, read and checked (the first wrong setting throws its ConfigError). */
  settings(environment: Env): Map<string, unknown> {
    return new Map(this.modules.map((m) => [m.name, m.settings?.(environment)]));
  }

  /** Builds every feature in order; the result holds each one's exports under its name. */
  build(platform: Platform<Config>, ..._complete: Complete<Unit & KernelUnit, Required>): Built {
    const { database, now, config } = platform;
    const sections = this.settings(platform.environment);
    const postgres = database.dialect === 'postgres';
    const signals = new Map(this.modules.map((m) => [m.name, new Signal()]));
    const sinks = this.modules.flatMap((m) => (m.sink ? [m.sink(config, signals.get(m.name)!)] : []));
    const listeners: Array<(type: string, details?: Readonly<Record<string, unknown>>) => void> = [];
    const journalDeps = {
      now,
      sinks,
      onEvent: (type: string, details?: Readonly<Record<string, unknown>>) => {
        for (const listener of listeners) listener(type, details);
      },
    };
    const owners = this.modules.filter((m) => m.repositories);
    const bind = (db: Kysely<Tables>, commit: CommitHooks) => {
      const unit: Record<string, unknown> = {
        journal: new Journal(db, commit, journalDeps),
        limits: new LimitEventsRepository(db),
      };
      const binding: Binding = { commit, postgres, sinks, unit: () => unit };
      for (const m of owners) Object.assign(unit, m.repositories!(db, binding));
      return unit;
    };
    const repositories = bind(database.db, AUTOCOMMIT);
    const transaction = inTransaction(database.db, bind);
    const built: Record<string, unknown> = {};
    const observers = new Map(
      this.modules.map((m) => [m.name, m.metrics?.(platform.registry, () => built[m.name])]),
    );
    for (const m of this.modules) {
      if (!m.build) {
        built[m.name] = {};
        continue;
      }
      built[m.name] = m.build(
        {
          ...platform,
          postgres,
          repositories,
          transaction,
          settings: sections.get(m.name),
          features: this.modules,
          observe: observers.get(m.name) ?? {},
          due: signals.get(m.name)!,
          onAccountEvent: (listener) => void listeners.push(listener),
        },
        built,
      );
    }
    return built as Built;
  }
}

/** Declares a feature's module with its types inferred from `build`'s parameters. */
export function module<Config>() {
  return <N extends string, Needs, E, Own extends object, U extends object, O, S>(
    m: Module<Config, N, Needs, E, Own, U, O, S>,
  ) => m;
}
