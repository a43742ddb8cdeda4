// What the sign-in by mail suites share (not a test file): the asks and verify requests, each from a
// client address of its own (the asks' per-address limit and the sign-in throttle never meet across
// tests); the link and the code read from the mails a real SMTP server received; the answers'
// shapes in each profile; and `settle`, which waits until the server has worked out every ask and
// sent every mail it queued, read from the database, so "nothing was mailed" is a fact and not a
// guess about timing.
import assert from 'node:assert/strict';
import { after } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import type { Profile } from '../../src/config.ts';
import { DEVICE_COOKIE } from '../../src/sessions/guard.ts';
import type { TestApp } from '../helpers/app.ts';
import { openTestDatabase } from '../helpers/db.ts';
import { mailsTo, sleep, waitForMails, waitUntil } from '../helpers/mail.ts';
import { linkToken, type ReceivedMail, type TestSmtp } from '../helpers/smtp.ts';
import type { Store } from '../helpers/stores.ts';

export const PUBLIC_URL = 'http://usher.test';
export const PROFILES: readonly Profile[] = ['a', 'b'];
export const LINK = /sign-in link/i;
export const CODE = /sign-in code/i;
/** CONTRACT: a link lives 15 minutes, a code 10. */
export const LINK_TTL_MS = 15 * 60 * 1000;
export const CODE_TTL_MS = 10 * 60 * 1000;
/** The sign-in mails' window (PASSWORD_RESET_MAX_PER_ACCOUNT per 15 minutes). */
export const MAIL_WINDOW_MS = 15 * 60 * 1000;

/** The code in a sign-in code mail (its subject says it). */
export const codeOf = (mail: ReceivedMail): string => {
  const code = /\b(\d{6})\b/.exec(mail.subject)?.[1];
  assert.ok(code, `a 6-digit code in the subject: ${mail.subject}`);
  return code;
};

/** A six-digit code that is not `code`. */
export const otherCode = (code: string): string => String((Number(code) + 1) % 1_000_000).padStart(6, '0');

let addresses = 0;
/** A client address no other request of this process came from. */
export function freshAddress(): string {
  addresses += 1;
  return `10.31.${(addresses >> 8) & 255}.${addresses & 255}`;
}

let emails = 0;
/** An email no account has (nor any other test of this process uses). */
export function unknownEmail(what = 'nobody'): string {
  emails += 1;
  return `${what}.${emails}.${process.pid}@example.com`;
}

export interface From {
  address?: string;
  headers?: Record<string, string>;
}

/** A JSON POST (a string body is sent as it is) from `address`, a fresh one unless given. */
export function postFrom(
  t: TestApp,
  url: string,
  body: unknown,
  { address = freshAddress(), headers = {} }: From = {},
): Promise<LightMyRequestResponse> {
  return t.inject({
    method: 'POST',
    url,
    remoteAddress: address,
    headers: { 'content-type': 'application/json', ...headers },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

export const askLink = (t: TestApp, email: unknown, extra: object = {}, from: From = {}) =>
  postFrom(t, '/api/signin/email-link', { email, ...extra }, from);
export const askCode = (t: TestApp, email: unknown, from: From = {}) =>
  postFrom(t, '/api/signin/email-code', { email }, from);
export const verifyLink = (t: TestApp, token: unknown, from: From = {}) =>
  postFrom(t, '/api/signin/email-link/verify', { token }, from);
export const verifyCode = (t: TestApp, email: unknown, code: unknown, from: From = {}) =>
  postFrom(t, '/api/signin/email-code/verify', { email, code }, from);

export function assertAccepted(res: LightMyRequestResponse, what: string): void {
  assert.equal(res.statusCode, 202, `${what}: ${res.body}`);
  assert.deepEqual(res.json(), { status: 'accepted' }, what);
}

/** Waits for `count` sign-in link mails to `email`; their tokens, oldest first. */
export async function linkTokens(smtp: TestSmtp, email: string, count = 1): Promise<string[]> {
  const mails = await waitForMails(smtp, email, LINK, count);
  return mails.map((m) => linkToken(m, '/signin/email-link'));
}

/** Waits for `count` sign-in code mails to `email`; their codes, oldest first. */
export async function codes(smtp: TestSmtp, email: string, count = 1): Promise<string[]> {
  return (await waitForMails(smtp, email, CODE, count)).map(codeOf);
}

/** The sign-in mails (links and codes) `email` received. */
export const signinMails = (smtp: TestSmtp, email: string) =>
  mailsTo(smtp, email).filter((m) => LINK.test(m.subject) || CODE.test(m.subject));

/** The headers of an answer without those that differ from one answer to the next. */
export function stableHeaders(res: LightMyRequestResponse): Record<string, unknown> {
  const { date: _date, 'x-request-id': _id, ...rest } = res.headers;
  return rest;
}

/** Two answers are the same to the client: status, headers (but the date and request id), body. */
export function assertSameAnswer(a: LightMyRequestResponse, b: LightMyRequestResponse, what: string): void {
  assert.equal(a.statusCode, b.statusCode, `${what}: status (${a.body} / ${b.body})`);
  assert.deepEqual(stableHeaders(a), stableHeaders(b), `${what}: headers`);
  assert.equal(a.body, b.body, `${what}: body`);
}

/**
 * SIGNIN_FAILED with `status` in the profile's shape: `{"error":"SIGNIN_FAILED"}` alone in profile
 * A, with a message in profile B; never a session.
 */
export function assertSigninFailed(
  res: LightMyRequestResponse,
  profile: Profile,
  status: number,
  what: string,
): void {
  assert.equal(res.statusCode, status, `${what}: ${res.statusCode} ${res.body}`);
  if (profile === 'a') assert.equal(res.body, '{"error":"SIGNIN_FAILED"}', what);
  else {
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), ['error', 'message'], `${what}: ${res.body}`);
    assert.equal(body.error, 'SIGNIN_FAILED', what);
    assert.ok(typeof body.message === 'string' && body.message.length > 0, what);
  }
  assert.equal(res.headers['set-cookie'], undefined, `${what}: no cookie`);
}

/** Usher's own error shape, `{error: code, message}`, with `status`. */
export function assertError(res: LightMyRequestResponse, status: number, code: string, what: string): void {
  assert.equal(res.statusCode, status, `${what}: ${res.statusCode} ${res.body}`);
  const body = res.json();
  assert.deepEqual(Object.keys(body).sort(), ['error', 'message'], `${what}: ${res.body}`);
  assert.equal(body.error, code, `${what}: ${res.body}`);
  assert.ok(typeof body.message === 'string' && body.message.length > 0, what);
}

/** The signed-in user in the profile's success body. */
export function signedInUser(res: LightMyRequestResponse, profile: Profile): Record<string, unknown> {
  assert.equal(res.statusCode, 200, res.body);
  const body = res.json();
  if (profile === 'a') {
    assert.deepEqual(Object.keys(body).sort(), ['email', 'id', 'name'], res.body);
    return body;
  }
  assert.deepEqual(Object.keys(body), ['user'], res.body);
  return body.user;
}

/** The value of cookie `name` that a response set (undefined when it set none). */
export function cookieSet(res: LightMyRequestResponse, name: string): string | undefined {
  const cookies = ([] as string[]).concat(res.headers['set-cookie'] ?? []);
  const cookie = cookies.find((c) => c.startsWith(`${name}=`));
  return cookie?.slice(name.length + 1).split(';')[0];
}

export const deviceCookie = (res: LightMyRequestResponse) => cookieSet(res, DEVICE_COOKIE);

export type TestDatabase = ReturnType<typeof openTestDatabase>;

/**
 * The suite's store read directly (opened at first use, once an app has migrated it; closed
 * after the suite).
 */
export function storeReader(store: Store): () => TestDatabase {
  let database: TestDatabase | undefined;
  after(async () => {
    await database?.close();
  });
  return () => {
    database ??= openTestDatabase(store);
    return database;
  };
}

/**
 * Waits until every ask recorded is worked out (taken by a worker, in the transaction that queued
 * its mail, if any) and every queued mail that is due by `now` (the apps' clock) is sent (so it is
 * in the SMTP server's list by now).
 */
export async function settle(db: TestDatabase, now: () => number = Date.now): Promise<void> {
  await waitUntil(
    async () => {
      const asks = await db.db
        .selectFrom('reset_requests')
        .select((eb) => eb.fn.countAll<number | bigint>().as('n'))
        .where('done', '<>', 1)
        .executeTakeFirstOrThrow();
      if (Number(asks.n) > 0) return false;
      const mail = await db.db
        .selectFrom('mail_outbox')
        .select((eb) => eb.fn.countAll<number | bigint>().as('n'))
        .where('status', '=', 'pending')
        // A mail put off to later (a failed attempt's retry) is not one this waits for.
        .where('next_attempt_at', '<=', BigInt(now() + 5000))
        .executeTakeFirstOrThrow();
      return Number(mail.n) === 0;
    },
    15_000,
    'every ask worked out and every mail sent',
  );
}

/**
 * The mail_signins rows (links and codes) recorded for `email`. Not their times: SQLite's adapter
 * reads any column named created_at or expires_at as ISO text (db/schema.ts's TIMESTAMP_COLUMNS),
 * and these two hold epoch milliseconds.
 */
export async function mailSigninRows(db: TestDatabase, email: string) {
  return db.db
    .selectFrom('mail_signins')
    .select([
      'id',
      'kind',
      'secret_hash',
      'salt',
      'email',
      'email_key',
      'user_id',
      'redirect_to',
      'locale',
      'failures',
    ])
    .where('email_key', '=', email.trim().toLowerCase())
    .orderBy('id')
    .execute();
}

/**
 * Every value of every table but `except`, as text (each column cast to text in SQL, so that no
 * adapter conversion applies), one JSON array of rows per table.
 */
export async function storedText(db: TestDatabase, except: readonly string[] = []): Promise<string> {
  const parts: string[] = [];
  for (const table of await db.db.introspection.getTables()) {
    if (except.includes(table.name)) continue;
    const columns = sql.join(
      table.columns.map((c) => sql`cast(${sql.ref(c.name)} as text) as ${sql.ref(c.name)}`),
    );
    const rows = await sql<
      Record<string, string | null>
    >`select ${columns} from ${sql.table(table.name)}`.execute(db.db);
    parts.push(`${table.name}: ${JSON.stringify(rows.rows)}`);
  }
  return parts.join('\n');
}

/**
 * PostgreSQL: an ACCESS EXCLUSIVE lock on `table` in a transaction of the test's own, until
 * `release`; `untilWaiting(n, ms)` resolves once n other transactions wait for it (or after ms).
 */
export async function holdTable(database: TestDatabase, table: string) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let locked!: () => void;
  const isLocked = new Promise<void>((resolve) => {
    locked = resolve;
  });
  const transaction = database.db.transaction().execute(async (trx) => {
    await sql`lock table ${sql.table(table)} in access exclusive mode`.execute(trx);
    locked();
    await released;
  });
  await Promise.race([isLocked, transaction]);
  const waiting = async () => {
    const { rows } = await sql<{ n: string }>`
      select count(*) as n from pg_locks l join pg_class c on c.oid = l.relation
      where c.relname = ${table} and not l.granted`.execute(database.db);
    return Number(rows[0]!.n);
  };
  /** Lock waits of any kind (a table, or a row held by another transaction: its transaction id). */
  const waitingAnywhere = async () => {
    const { rows } = await sql<{ n: string }>`select count(*) as n from pg_locks where not granted`.execute(
      database.db,
    );
    return Number(rows[0]!.n);
  };
  return {
    async untilWaiting(n: number, ms: number) {
      const deadline = Date.now() + ms;
      while ((await waiting()) < n && Date.now() < deadline) await sleep(20);
    },
    /** Until `n` lock waits exist in all, whatever they wait on. */
    async untilWaitingAnywhere(n: number, ms: number) {
      const deadline = Date.now() + ms;
      while ((await waitingAnywhere()) < n && Date.now() < deadline) await sleep(20);
    },
    async release() {
      release();
      await transaction;
    },
  };
}
