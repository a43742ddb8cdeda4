import type { Kysely, QueryCreator } from 'kysely';
import { type AuditEvent, AuditRepository, auditRow } from '../audit/repository.ts';
import { runPrepared, type SlottedQuery, slotted } from '../db/prepared.ts';
import type { Tables } from '../db/schema.ts';
import { type NewSession, sessionRow } from '../sessions/repository.ts';
import { insertDeliveries, type WebhookNotice, WebhooksRepository } from '../webhooks/repository.ts';
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
  /** The sign-in's audit record (undefined: AUDIT_SIGNINS=false), written with the session. */
  audit: AuditEvent | undefined;
  /** The user.signed_in event for the webhooks listening, queued with the session. */
  notice: WebhookNotice;
}

/** Whether the session was granted, and how many webhook deliveries were queued with it. */
export interface Granted {
  granted: boolean;
  notified: number;
}

export interface GrantRepositoryOptions {
  /**
   * PostgreSQL: the grant is one statement (a data-modifying WITH), the user's password
   * credential row share-locked while it runs. SQLite has neither: its grant is two statements in one transaction.
   */
  postgres: boolean;
}

/**
 * The session grant of every sign-in, with the throttle's forgiveness and the known device, made
 * one round trip where the store allows it: each round trip saved is sign-ins gained.
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
    if (this.#db.isTransaction) return grantInSteps(this.#db, grant);
    return this.#db.transaction().execute((trx) => grantInSteps(trx, grant));
  }

  async #grantInOneStatement({
    session,
    passwordHash,
    forgive,
    remember,
    audit,
    notice,
  }: SessionGrant): Promise<Granted> {
    this.#grant ??= slotted(GRANT_SLOTS, (s) =>
      this.#db
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
        )
        // The audit record and the webhook deliveries, only once granted (audit/journal.ts's,
        // in this statement): a null type (AUDIT_SIGNINS=false) records nothing.
        .with('audited', (db) =>
          db
            .insertInto('audit_events')
            .columns(['created_at', 'type', 'actor_id', 'user_id', 'address', 'user_agent', 'details'])
            .expression((eb) =>
              eb
                .selectFrom('granted')
                .select([
                  eb.val(s.created_at).as('created_at'),
                  eb.val(s.auditType).as('type'),
                  'user_id as actor_id',
                  'user_id',
                  eb.val(s.auditAddress).as('address'),
                  eb.val(s.auditUserAgent).as('user_agent'),
                  eb.val(s.auditDetails).as('details'),
                ])
                .where(eb.cast(eb.val(s.auditType), 'text'), 'is not', null),
            )
            .returning('id'),
        )
        .with('notified', (db) =>
          insertDeliveries(
            db,
            'user.signed_in',
            {
              message_id: s.noticeMessageId,
              user_id: s.user_id,
              payload: s.noticePayload,
              created_at: s.created_at,
              retry_until: s.noticeRetryUntil,
              next_attempt_at: s.noticeAt,
            },
            ({ exists, selectFrom }) => exists(selectFrom('granted').select('user_id')),
          ).returning('id'),
        )
        .selectFrom('granted')
        .select(({ fn, selectFrom }) => [
          fn.countAll<number | string | bigint>().as('granted'),
          selectFrom('notified')
            .select(({ fn }) => fn.countAll<number | string | bigint>().as('n'))
            .as('notified'),
          // Referenced so that PostgreSQL runs it (a data-modifying WITH runs regardless; this keeps it explicit).
          selectFrom('audited')
            .select(({ fn }) => fn.countAll<number | string | bigint>().as('n'))
            .as('audited'),
        ]),
    );
    const row = audit && auditRow(audit, session.now);
    const rows = await runPrepared(
      this.#db,
      this.#grant.query,
      this.#grant.parameters({
        ...sessionRow(session),
        passwordHash,
        ...forgive,
        rememberDigest: remember?.tokenDigest ?? null,
        rememberAt: BigInt(remember?.now ?? 0),
        rememberUntil: BigInt(remember?.expiresAt ?? 0),
        auditType: row?.type ?? null,
        auditAddress: row?.address ?? null,
        auditUserAgent: row?.user_agent ?? null,
        auditDetails: row?.details ?? null,
        noticeMessageId: notice.messageId,
        noticePayload: notice.payload,
        noticeRetryUntil: BigInt(notice.retryUntil),
        noticeAt: BigInt(notice.createdAt.getTime()),
      }),
    );
    return { granted: Number(rows[0]?.[0] ?? 0) > 0, notified: Number(rows[0]?.[1] ?? 0) };
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
  'auditType',
  'auditAddress',
  'auditUserAgent',
  'auditDetails',
  'noticeMessageId',
  'noticePayload',
  'noticeRetryUntil',
  'noticeAt',
] as const;
type GrantSlot = (typeof GRANT_SLOTS)[number];

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
  { session, passwordHash, forgive, remember, audit, notice }: SessionGrant,
): Promise<Granted> {
  const granted = await insertIfHash(db, sessionRow(session), passwordHash, false)
    .returning('user_id')
    .executeTakeFirst();
  if (!granted) return { granted: false, notified: 0 };
  await db
    .updateTable('users')
    .set({ last_signin_at: sessionRow(session).created_at })
    .where('id', '=', session.userId)
    .execute();
  await new SigninAttemptsRepository(db).clear(forgive.accountDigest, forgive);
  if (remember)
    await new SigninDevicesRepository(db).remember({ ...remember, accountDigest: forgive.accountDigest });
  if (audit) await new AuditRepository(db).record(audit, session.now);
  // Row locks matter only to claims; this repository only inserts.
  const notified = await new WebhooksRepository(db, { rowLocks: false }).enqueue(notice);
  return { granted: true, notified };
}
