import type { Kysely, QueryCreator } from 'kysely';
import { runPrepared, type SlottedQuery, slotted } from '../db/prepared.ts';
import type { Tables } from '../db/schema.ts';
import type { Granted as GrantedRows, JournalEntry, JournalSink, SinkStatement } from '../kernel/journal.ts';
import { type NewSession, sessionRow } from '../sessions/index.ts';
import { SigninDevicesRepository } from './device-repository.ts';
import { SigninAttemptsRepository } from './throttle-repository.ts';

/** A session to store if the user still has `passwordHash`, forgiving an attempt's scope with it. */
export interface SessionGrant {
  session: NewSession;
  /** The fence: undefined grants to the user as long as the account exists. */
  passwordHash: string | undefined;
  /** The throttle's rows a success clears: this account from this address and this known device. */
  forgive: { accountDigest: string; address: string; device: string | null };
  /** The client to remember as a known device of the account; undefined when devices are off. */
  remember: { tokenDigest: string; now: number; expiresAt: number } | undefined;
  /** The sign-in's journal entry (its record, user.signed_in), written with the session. */
  entry: JournalEntry;
}

/** Whether the session was granted, and the rows each journal sink wrote with it, in their order. */
export interface Granted {
  granted: boolean;
  written: number[];
}

export interface GrantRepositoryOptions {
  /**
   * PostgreSQL: the grant is one statement (a data-modifying WITH), the user's password
   * credential row share-locked while it runs. SQLite has neither: its grant is two statements in one transaction.
   */
  postgres: boolean;
  /** The journal's sinks (kernel/journal.ts), whose rows the grant writes with the session. */
  sinks: readonly JournalSink[];
}

/**
 * The session grant of every sign-in, with the throttle's forgiveness, the known device and the
 * journal's rows, made one round trip where the store allows it: each round trip saved is sign-ins
 * gained. The one statement that writes other features' tables (the throttle's, the devices', and
 * through their `statement`s the journal sinks' audit records and webhook deliveries): the
 * exception to each feature writing only its own, kept for the hot path of sign-ins.
 */
export class GrantRepository {
  readonly #db: Kysely<Tables>;
  readonly #options: GrantRepositoryOptions;
  // Built once, named (db/prepared.ts): every password sign-in runs it.
  #grant: SlottedQuery<GrantSlot> | undefined;
  constructor(db: Kysely<Tables>, options: GrantRepositoryOptions) {
    this.#db = db;
    this.#options = options;
  }

  /**
   * Stores the session only if its user still has `passwordHash`, and forgives the attempt with
   * it, atomically; false (nothing written) when the hash changed or the user is gone. On
   * PostgreSQL the row is share-locked, so a password change either committed before (false) or
   * waits for this to commit and then ends the session. Inside the caller's transaction when
   * called on one (a code spent with the session), else on its own.
   */
  async grantSession(grant: SessionGrant): Promise<Granted> {
    // The one-statement form is the password sign-in's (the hot path, always fenced).
    if (this.#options.postgres && grant.passwordHash !== undefined) return this.#grantInOneStatement(grant);
    const sinks = this.#options.sinks;
    if (this.#db.isTransaction) return grantInSteps(this.#db, sinks, grant);
    return this.#db.transaction().execute((trx) => grantInSteps(trx, sinks, grant));
  }

  async #grantInOneStatement({
    session,
    passwordHash,
    forgive,
    remember,
    entry,
  }: SessionGrant): Promise<Granted> {
    const parts = this.#options.sinks.map((sink) => sink.statement);
    this.#grant ??= slotted([...GRANT_SLOTS, ...parts.flatMap(partSlots)], (s) => {
      let query = this.#db
        .with('granted', (db) => insertIfHash(db, s, s.passwordHash, true).returning('user_id'))
        // The account's last sign-in, for support staff (admin/): with the session it dates.
        .with('dated', (db) =>
          db
            .updateTable('users')
            .set({ last_signin_at: s.created_at as string })
            .where('id', 'in', (eb) => eb.selectFrom('granted').select('user_id'))
            .returning('id'),
        )
        .with('forgiven', (db) =>
          db
            .deleteFrom('signin_attempts')
            .where('account_digest', '=', s.accountDigest)
            .where((eb) => eb.or([eb('address', '=', s.address), eb('device', '=', s.device)]))
            .where(({ exists, selectFrom }) => exists(selectFrom('granted').select('user_id')))
            .returning('id'),
        )
        // Only once granted, and a null digest (devices off) inserts nothing.
        .with('remembered', (db) =>
          db
            .insertInto('signin_devices')
            .columns(['token_digest', 'account_digest', 'remembered_at', 'known_until'])
            .expression((eb) =>
              eb
                .selectFrom('granted')
                .select([
                  eb.val(s.rememberDigest).as('token_digest'),
                  eb.val(s.accountDigest).as('account_digest'),
                  eb.val(s.rememberAt).as('remembered_at'),
                  eb.val(s.rememberUntil).as('known_until'),
                ])
                .where(eb.cast(eb.val(s.rememberDigest), 'text'), 'is not', null),
            )
            .onConflict((oc) =>
              oc
                .columns(['token_digest', 'account_digest'])
                .doUpdateSet((eb) => ({ known_until: eb.ref('excluded.known_until') })),
            )
            .returning('token_digest'),
        );
      // Each sink's rows (the audit record, the webhook deliveries), only once granted; their
      // tables are theirs, so the builder is told only that `granted` is there to gate on.
      for (const part of parts)
        query = query.with(part.name, (db) =>
          part.insert(db as unknown as QueryCreator<Tables & GrantedRows>, partSlotsOf(part, s)),
        ) as unknown as typeof query;
      return query.selectFrom('granted').select(({ fn, selectFrom }) => [
        fn.countAll<number | string | bigint>().as('granted'),
        // Each part's count, what its sink is told it wrote (PostgreSQL runs a data-modifying WITH
        // whether read or not; reading it keeps that explicit).
        ...parts.map((part) =>
          selectFrom(part.name as 'granted')
            .select(({ fn }) => fn.countAll<number | string | bigint>().as('n'))
            .as(part.name),
        ),
      ]);
    });
    const values: Record<GrantSlot, unknown> = {
      ...sessionRow(session),
      passwordHash,
      ...forgive,
      rememberDigest: remember?.tokenDigest ?? null,
      rememberAt: BigInt(remember?.now ?? 0),
      rememberUntil: BigInt(remember?.expiresAt ?? 0),
    };
    for (const part of parts)
      for (const [slot, value] of Object.entries(part.values(entry))) values[`${part.name}.${slot}`] = value;
    const rows = await runPrepared(this.#db, this.#grant.query, this.#grant.parameters(values));
    const row = rows[0];
    return { granted: Number(row?.[0] ?? 0) > 0, written: parts.map((_, i) => Number(row?.[i + 1] ?? 0)) };
  }
}

type SessionValues = ReturnType<typeof sessionRow>;
// Listed as a record's keys so that a column sessionRow gains cannot be left out of the insert.
const SESSION_COLUMNS = Object.keys({
  token_hash: true,
  public_id: true,
  user_id: true,
  user_agent: true,
  created_at: true,
  last_seen_at: true,
  expires_at: true,
  amr: true,
} satisfies Record<keyof SessionValues, true>) as (keyof SessionValues)[];
const GRANT_SLOTS = [
  ...SESSION_COLUMNS,
  'passwordHash',
  'accountDigest',
  'address',
  'device',
  'rememberDigest',
  'rememberAt',
  'rememberUntil',
] as const;
/** A slot of the grant's own, or of a sink's part, named after the part: `audited.type`. */
type GrantSlot = (typeof GRANT_SLOTS)[number] | `${string}.${string}`;

const partSlots = (part: SinkStatement) => part.slots.map((slot) => `${part.name}.${slot}` as const);

/** A part's slots under its own names. */
function partSlotsOf(part: SinkStatement, slots: Readonly<Record<GrantSlot, never>>) {
  return Object.fromEntries(part.slots.map((slot) => [slot, slots[`${part.name}.${slot}`]])) as Readonly<
    Record<string, never>
  >;
}

/**
 * The session insert, as INSERT … SELECT from the user's password credential when it still has
 * `passwordHash` (share-locked with `lock`): `values` are the row's (or slots for them).
 */
function insertIfHash(
  db: QueryCreator<Tables>,
  values: Readonly<Record<keyof SessionValues, unknown>>,
  passwordHash: unknown,
  lock: boolean,
) {
  return db
    .insertInto('sessions')
    .columns(SESSION_COLUMNS)
    .expression((eb) => {
      const columns = SESSION_COLUMNS.map((column) => eb.val(values[column]).as(column));
      // Unfenced (a method without a password): as long as the account exists.
      if (passwordHash === undefined)
        return eb
          .selectFrom('users')
          .select(columns)
          .where('id', '=', values.user_id as bigint);
      const held = eb
        .selectFrom('password_credentials')
        .select(columns)
        .where('user_id', '=', values.user_id as bigint)
        .where('hash', '=', passwordHash as string);
      return lock ? held.forShare() : held;
    });
}

async function grantInSteps(
  db: Kysely<Tables>,
  sinks: readonly JournalSink[],
  { session, passwordHash, forgive, remember, entry }: SessionGrant,
): Promise<Granted> {
  const granted = await insertIfHash(db, sessionRow(session), passwordHash, false)
    .returning('user_id')
    .executeTakeFirst();
  if (!granted) return { granted: false, written: sinks.map(() => 0) };
  await db
    .updateTable('users')
    .set({ last_signin_at: sessionRow(session).created_at })
    .where('id', '=', session.userId)
    .execute();
  await new SigninAttemptsRepository(db).clear(forgive.accountDigest, forgive);
  if (remember)
    await new SigninDevicesRepository(db, { rowLocks: false }).remember({
      ...remember,
      accountDigest: forgive.accountDigest,
    });
  const written: number[] = [];
  for (const sink of sinks) written.push(await sink.write(db, entry));
  return { granted: true, written };
}
