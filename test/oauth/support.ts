// What the provider sign-in suites share (not a test file): the provider's settings read through
// the real parser, a Usher listening on a known port (its redirect URI registered at the provider),
// a browser made of fetch and a cookie jar, and the checks that come back in every suite.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { AppOptions } from '../../src/app.ts';
import { type Config, loadConfig, type Profile } from '../../src/config.ts';
import { NO_THROTTLE, newUser, register, startApp, type TestApp } from '../helpers/app.ts';
import { openTestDatabase } from '../helpers/db.ts';
import { mailsTo, SUBJECTS, waitForMails } from '../helpers/mail.ts';
import {
  type AuthorizeOptions,
  type AuthorizeResult,
  CookieJar,
  fetchWithJar,
  type TestOidcProvider,
} from '../helpers/oidc-provider.ts';
import { freePort } from '../helpers/process.ts';
import { linkToken, type TestSmtp } from '../helpers/smtp.ts';
import type { Store } from '../helpers/stores.ts';

export const PROVIDER = 'test';
export const PROVIDER_NAME = 'Test ID';
export const CLIENT_ID = 'usher';
export const CLIENT_SECRET = 's3cret';
/** A further audience (an iOS app's client id) whose ID tokens the native sign-in accepts. */
export const APP_AUDIENCE = 'ios-app';
export const TIMEOUT_SECONDS = 2;
/** An origin of CORS_ORIGINS: a redirectTo there is allowed. */
export const APP_ORIGIN = 'https://app.example.test';
export const SUCCESS = 'method="oauth",outcome="success"';
export const PROFILES: readonly Profile[] = ['a', 'b'];

/** TOTP secrets are sealed under this (PostgreSQL has no key file); the same for every app of a file. */
export const ENCRYPTION_KEY = randomBytes(32);

/** The app's `oauth` settings, from the environment variables an operator sets, through the real parser. */
export function oauthSettings(issuer: string, env: Record<string, string> = {}): Config['oauth'] {
  return loadConfig({
    OAUTH_PROVIDERS: PROVIDER,
    OAUTH_TEST_CLIENT_ID: CLIENT_ID,
    OAUTH_TEST_CLIENT_SECRET: CLIENT_SECRET,
    OAUTH_TEST_ISSUER: issuer,
    OAUTH_TEST_NAME: PROVIDER_NAME,
    OAUTH_TEST_AUDIENCES: APP_AUDIENCE,
    OAUTH_TIMEOUT_SECONDS: String(TIMEOUT_SECONDS),
    ...env,
  }).oauth;
}

export interface Usher {
  readonly t: TestApp;
  /** PUBLIC_URL (where it listens, unless `address` says otherwise). */
  readonly base: string;
  /** Where this instance listens when that is not PUBLIC_URL (several instances behind one). */
  readonly address?: string;
  /** The redirect URI Usher must send: exactly PUBLIC_URL + /api/oauth/test/callback. */
  readonly callback: string;
}

export interface UsherOptions {
  overrides?: Partial<Config>;
  env?: Record<string, string>;
  options?: Pick<AppOptions, 'clock' | 'features'>;
  /** `localhost` (for the browser suites) or `127.0.0.1` (default). */
  host?: 'localhost' | '127.0.0.1';
}

/**
 * A Usher listening on 127.0.0.1:<free port> whose PUBLIC_URL names it, with the test provider,
 * and its redirect URI registered at the provider (a browser really goes there).
 */
export async function listeningUsher(
  store: Store,
  profile: Profile,
  provider: Pick<TestOidcProvider, 'issuer' | 'addClient'>,
  { overrides = {}, env = {}, options = {}, host = '127.0.0.1' }: UsherOptions = {},
): Promise<Usher> {
  const port = await freePort();
  const base = `http://${host}:${port}`;
  const callback = `${base}/api/oauth/${PROVIDER}/callback`;
  await provider.addClient({ client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: [callback] });
  const t = await startApp(
    store,
    profile,
    {
      oauth: oauthSettings(provider.issuer, env),
      publicUrl: base,
      corsOrigins: [APP_ORIGIN],
      throttle: { ...NO_THROTTLE },
      encryptionKey: ENCRYPTION_KEY,
      ...overrides,
    },
    options,
  );
  await t.app.listen({ host: '127.0.0.1', port });
  return { t, base, callback };
}

/** What one pass through the provider left: the start, the provider's pages, the callback. */
export interface Flow {
  start: Response;
  /** The start's Location (the provider's authorization URL). */
  authorization: URL;
  provider: AuthorizeResult;
  /** The URL the provider sent the browser back to (Usher's callback with code, state, iss). */
  callbackUrl: URL;
  callback: Response;
  /** The callback's Location, resolved on PUBLIC_URL (null when there is none). */
  location: URL | null;
  /** The session cookie the callback set (undefined when none). */
  session: string | undefined;
}

export interface FlowOptions {
  login: string;
  redirectTo?: string;
  intent?: 'signin' | 'link';
  consent?: AuthorizeOptions['consent'];
  /** Changes the provider's answer before the browser takes it back to Usher. */
  tamper?: (callbackUrl: URL) => void;
}

/** A browser: fetch without following redirects, and a cookie jar for every host. */
export class Browser {
  readonly jar = new CookieJar();

  get(url: string, headers: Record<string, string> = {}): Promise<Response> {
    return fetchWithJar(this.jar, url, { headers });
  }

  postJson(url: string, body: unknown): Promise<Response> {
    return fetchWithJar(this.jar, url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  }

  /** Signs in with a password as a page of the app would: the session cookie lands in the jar. */
  async passwordSignIn(usher: Usher, user: { email: string; password: string }): Promise<string> {
    const res = await this.postJson(`${usher.address ?? usher.base}/api/signin`, {
      email: user.email,
      password: user.password,
    });
    assert.equal(res.status, 200, await res.text());
    const token = this.session(usher);
    assert.ok(token, 'the password sign-in set the session cookie');
    return token;
  }

  /** The session token in the jar for `usher`'s host. */
  session(usher: Usher): string | undefined {
    return this.jar.get(usher.base, 'usher_session');
  }

  /** GET /api/oauth/test/start, as a navigation. */
  start(usher: Usher, query: { redirectTo?: string; intent?: string } = {}, provider = PROVIDER) {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, v);
    const qs = params.toString();
    return this.get(`${usher.address ?? usher.base}/api/oauth/${provider}/start${qs ? `?${qs}` : ''}`);
  }

  /** Start, the provider's pages (over HTTP), and the callback in this browser. */
  async flow(usher: Usher, provider: TestOidcProvider, options: FlowOptions): Promise<Flow> {
    const start = await this.start(usher, { redirectTo: options.redirectTo, intent: options.intent });
    const text = start.status === 302 ? '' : await start.text();
    assert.equal(start.status, 302, `the start redirects to the provider: ${text}`);
    const authorization = new URL(start.headers.get('location') ?? '');
    assert.equal(authorization.origin, provider.issuer, 'the start goes to the provider');
    const result = await provider.authorize(authorization.href, {
      login: options.login,
      consent: options.consent,
      jar: this.jar,
    });
    const callbackUrl = new URL(result.location);
    options.tamper?.(callbackUrl);
    return {
      start,
      authorization,
      provider: result,
      callbackUrl,
      ...(await this.callback(usher, callbackUrl)),
    };
  }

  /** Takes the provider's answer to Usher's callback in this browser. */
  async callback(usher: Usher, callbackUrl: URL | string) {
    const callback = await this.get(String(callbackUrl));
    const raw = callback.headers.get('location');
    const session = callback.headers
      .getSetCookie()
      .map((c) => /^usher_session=([^;]+)/.exec(c)?.[1])
      .find((v) => v);
    return { callback, location: raw === null ? null : new URL(raw, usher.base), session };
  }
}

/** Asserts a 303 to `redirectTo` with a new session cookie; returns the session token. */
export async function assertSignedIn(
  usher: Usher,
  flow: Pick<Flow, 'callback' | 'location' | 'session'>,
  redirectTo = '/account',
): Promise<string> {
  const body = flow.callback.status === 303 ? '' : await flow.callback.text();
  assert.equal(flow.callback.status, 303, `the callback redirects: ${body} (${flow.location})`);
  assert.equal(flow.location?.href, new URL(redirectTo, usher.base).href, 'back to redirectTo, no error');
  assert.ok(flow.session, 'the session cookie is set');
  return flow.session;
}

/** Asserts a 303 to `redirectTo` with ?error=<code> and no session cookie. */
export async function assertRefused(
  usher: Usher,
  flow: Pick<Flow, 'callback' | 'location' | 'session'>,
  code: string,
  redirectTo = '/account',
) {
  const body = flow.callback.status === 303 ? '' : await flow.callback.text();
  assert.equal(flow.callback.status, 303, `the callback redirects: ${body}`);
  const expected = new URL(redirectTo, usher.base);
  expected.searchParams.set('error', code);
  assert.equal(flow.location?.href, expected.href, `back to redirectTo with error=${code}`);
  assert.equal(flow.session, undefined, 'no session cookie');
}

/** Asserts 400 INVALID_TOKEN and no redirect. */
export async function assertInvalidState(res: Response) {
  const text = await res.text();
  assert.equal(res.status, 400, text);
  assert.equal(res.headers.get('location'), null, 'no redirect');
  assert.equal(JSON.parse(text).error, 'INVALID_TOKEN', text);
  assert.ok(!res.headers.getSetCookie().some((c) => c.startsWith('usher_session=')), 'no session cookie');
}

let logins = 0;
/** A login at the provider no other test uses, with an email no other test uses. */
export function providerPerson(
  provider: TestOidcProvider,
  claims: { email?: string | null; email_verified?: boolean; name?: string; sub?: string } = {},
) {
  logins += 1;
  const login = `person${logins}.${process.pid}.${randomBytes(3).toString('hex')}`;
  const email = claims.email === null ? undefined : (claims.email ?? `${login}@provider.example`);
  const account = provider.setAccount(login, {
    ...(email === undefined ? {} : { email }),
    email_verified: claims.email_verified ?? true,
    name: claims.name ?? `Person ${logins}`,
    ...(claims.sub === undefined ? {} : { sub: claims.sub }),
  });
  return { login, ...account };
}

/** A registered account whose email was verified through the link mailed to it. */
export async function verifiedUser(t: TestApp, smtp: TestSmtp, body = newUser()) {
  const user = await register(t, body);
  const [mail] = await waitForMails(smtp, user.email, SUBJECTS.verify);
  const res = await t.post('/api/email/verify', { token: linkToken(mail!, '/verify-email') });
  assert.equal(res.statusCode, 204, res.body);
  return user;
}

/** A JSON GET with a Bearer token, through inject. */
export async function getAs(t: TestApp, token: string, url: string) {
  return t.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } });
}

export async function account(t: TestApp, token: string) {
  const res = await getAs(t, token, '/api/account');
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as {
    user: { id: number; email: string; name: string; emailVerified?: boolean };
    password: boolean;
    totp: boolean;
    passkeys: number;
    identities: Identity[];
  };
}

export interface Identity {
  id: string;
  provider: string;
  email: string;
  createdAt: string;
}

/** Every text a test can reach in the database: all rows of all tables, as JSON. */
export async function databaseText(store: Store): Promise<string> {
  const database = openTestDatabase(store);
  try {
    const tables = await database.db.introspection.getTables();
    const parts: string[] = [];
    for (const table of tables) {
      const rows = await sql<Record<string, unknown>>`select * from ${sql.table(table.name)}`.execute(
        database.db,
      );
      parts.push(
        JSON.stringify(rows.rows, (_k, v) =>
          typeof v === 'bigint' ? v.toString() : Buffer.isBuffer(v) ? v.toString('latin1') : v,
        ),
      );
    }
    return parts.join('\n');
  } finally {
    await database.close();
  }
}

/** The mails to `email` whose subject says an identity was linked (not unlinked). */
export function linkedMails(smtp: TestSmtp, email: string) {
  return mailsTo(smtp, email, /linked/i).filter((m) => !/unlinked/i.test(m.subject));
}

export { CookieJar };
