// PostgreSQL through Kysely, with the two things a pooler changes.
//
// The statement timeout: with DATABASE_POOLER=none it is a startup parameter of each connection
// (the pool's statement_timeout); a transaction pooler refuses startup parameters it does not know
// (PgBouncer: "unsupported startup parameter: statement_timeout") and would carry session settings
// from one client to the next anyway. So there each transaction begins with `set local
// statement_timeout`, in the same round trip as its `begin`.
//
// The migration lock: Kysely's PostgreSQL adapter takes a session-level advisory lock on a
// connection outside the migrations' transaction. Through a transaction pooler that lock stays on
// whichever server connection ran the statement, held after the process is gone, and the next
// instance can hang behind it or take it again on the same server connection. Here the lock is a
// transaction-level one, taken as the first statement of the transaction the migrations run in
// (database.ts), so it goes with that transaction, whatever connection the pooler chose; the
// adapter's own take is the same lock again, and nothing needs releasing.
import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type Kysely,
  PostgresAdapter,
  PostgresDialect,
  type PostgresDialectConfig,
  PostgresDriver,
  sql,
  type TransactionSettings,
} from 'kysely';

/** Kysely's own migration lock id, so that instances of an older Usher still wait for this one. */
const MIGRATION_LOCK_ID = 3853314791062309107n;

/** The advisory lock of migrations, held until the transaction it is taken in ends. */
export function takeMigrationLock<DB>(trx: Kysely<DB>): Promise<unknown> {
  return sql`select pg_advisory_xact_lock(${sql.lit(MIGRATION_LOCK_ID)})`.execute(trx);
}

class TransactionLockAdapter extends PostgresAdapter {
  override async acquireMigrationLock<DB>(db: Kysely<DB>): Promise<void> {
    await takeMigrationLock(db);
  }

  override async releaseMigrationLock(): Promise<void> {}
}

class TimeoutPerTransactionDriver extends PostgresDriver {
  readonly #setTimeout: string;

  constructor(config: PostgresDialectConfig, statementTimeoutMs: number) {
    super(config);
    this.#setTimeout = `set local statement_timeout = ${Math.trunc(statementTimeoutMs)}`;
  }

  override async beginTransaction(
    connection: DatabaseConnection,
    settings: TransactionSettings,
  ): Promise<void> {
    if (settings.isolationLevel || settings.accessMode) {
      await super.beginTransaction(connection, settings);
      await connection.executeQuery(CompiledQuery.raw(this.#setTimeout));
      return;
    }
    // Without parameters pg sends this as one simple query: both statements in one round trip.
    await connection.executeQuery(CompiledQuery.raw(`begin; ${this.#setTimeout}`));
  }
}

export interface UsherPostgresOptions {
  /** Set per transaction (a transaction pooler), or undefined when the connection carries it. */
  readonly statementTimeoutPerTransactionMs: number | undefined;
}

export class UsherPostgresDialect extends PostgresDialect {
  readonly #config: PostgresDialectConfig;
  readonly #options: UsherPostgresOptions;

  constructor(config: PostgresDialectConfig, options: UsherPostgresOptions) {
    super(config);
    this.#config = config;
    this.#options = options;
  }

  override createDriver(): Driver {
    const perTransaction = this.#options.statementTimeoutPerTransactionMs;
    return perTransaction === undefined
      ? new PostgresDriver(this.#config)
      : new TimeoutPerTransactionDriver(this.#config, perTransaction);
  }

  override createAdapter(): PostgresAdapter {
    return new TransactionLockAdapter();
  }
}
