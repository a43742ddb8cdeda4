// prompt=login and max_age decided on the server (issue 40, finding 2): a browser that asks for a
// new sign-in gets its code only after one. The session it had when it first came to the login page
// never counts, whatever cookie it sends (the `usher_reauth` cookie of before, forged, was taken at
// its word), nor does any session made before that first visit; `auth_time` and `amr` are those
// of the new sign-in, checked by openid-client. Without such a request the session still stands.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { Profile } from '../../src/config.ts';
import { openDatabase } from '../../src/db/database.ts';
import { compose, housekeeping } from '../../src/features.ts';
import { newUser, register } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';
import {
  type Authorization,
  addClient,
  authorizationRequest,
  authorize,
  CookieBrowser,
  exchange,
  interactionDetails,
  type OidcTestApp,
  relyingParty,
  SkewedClock,
  type Stop,
  signedInBrowser,
  startOidcApp,
} from '../helpers/usher-oidc.ts';

/** How long ago the "earlier" sign-ins of these tests were made (the app's clock set back for them). */
const EARLIER_MS = 60_000;

describeEachStore('OpenID Connect: a new sign-in decided on the server', (store) => {
  const clock = new SkewedClock();
  const apps = {} as Record<Profile, OidcTestApp>;
  before(async () => {
    apps.a = await startOidcApp(store, 'a', {}, { clock: clock.now });
    apps.b = await startOidcApp(store, 'b', {}, { clock: clock.now });
  });
  after(async () => {
    await apps.a?.close();
    await apps.b?.close();
  });

  /** A browser signed in `skewMs` from now (EARLIER_MS ago by default), as the app's clock saw it. */
  async function browserSignedIn(
    t: OidcTestApp,
    user: { email: string; password: string },
    skewMs = -EARLIER_MS,
  ) {
    clock.skewMs = skewMs;
    try {
      return await signedInBrowser(t, user);
    } finally {
      clock.skewMs = 0;
    }
  }

  /** A person, a third-party client they already agreed to, and a browser signed in EARLIER_MS ago. */
  async function signedInEarlier(t: OidcTestApp) {
    const user = newUser();
    const { id } = await register(t, user);
    const config = await relyingParty(t, await addClient(t));
    const browser = await browserSignedIn(t, user);
    const first = await authorize(browser, config);
    return { user, sub: id.toString(), config, browser, earlierAuthTime: first.claims()!.auth_time! };
  }

  /** The authorization request sent, stopping at the redirect to the login page: its uid and address. */
  async function toLoginPage(browser: CookieBrowser, authorization: Authorization) {
    const response = await browser.fetch(authorization.url.href);
    await response.body?.cancel();
    assert.equal(response.status, 303);
    const page = new URL(response.headers.get('location')!, authorization.url);
    const uid = /^\/oidc\/interaction\/([A-Za-z0-9_-]+)$/.exec(page.pathname)?.[1];
    assert.ok(uid, `sent to ${page.href}`);
    return { uid, page: page.href };
  }

  const isLoginPage = async (browser: CookieBrowser, stop: Stop, why: string) => {
    assert.equal(stop.leftTo, undefined, `${why}: went back to ${stop.leftTo} without a new sign-in`);
    assert.equal(stop.status, 200, stop.body);
    assert.match(stop.body, /<form id="signin"/);
    assert.equal((await interactionDetails(browser, stop)).prompt, 'login');
  };

  /** A new password sign-in in the browser, then the page again: the code, exchanged and checked by openid-client. */
  async function signInAndFinish(
    t: OidcTestApp,
    browser: CookieBrowser,
    user: { email: string; password: string },
    config: Awaited<ReturnType<typeof relyingParty>>,
    authorization: Authorization,
    page: string,
    maxAge?: number,
  ) {
    assert.equal((await browser.signIn(user)).status, 200);
    const landed = await browser.navigate(page);
    assert.ok(landed.leftTo, `back to the app after the new sign-in (${landed.status} at ${t.base})`);
    assert.ok(landed.leftTo.searchParams.get('code'));
    return (
      await exchange(config, authorization, landed.leftTo, maxAge === undefined ? {} : { maxAge })
    ).claims()!;
  }

  /** The values the forged cookie is tried with: the report's, and others a client may write. */
  const forgeries = (uid: string) => [
    `${uid}.-`,
    `${uid}.${randomBytes(16).toString('hex')}`,
    `${uid}.`,
    `${uid}`,
    'x',
  ];

  for (const profile of ['a', 'b'] as const)
    for (const asked of [{ prompt: 'login' }, { max_age: '0' }] as Record<string, string>[])
      test(`profile ${profile}, ${new URLSearchParams(asked)}: a usher_reauth cookie set by the client on the first visit does not pass the old session off as a new sign-in`, async () => {
        const t = apps[profile];
        const { user, sub, config, browser, earlierAuthTime } = await signedInEarlier(t);
        for (const forged of forgeries('UID')) {
          const requestedAt = Math.floor(Date.now() / 1000);
          const authorization = await authorizationRequest(config, asked);
          const { uid, page } = await toLoginPage(browser, authorization);
          const value = forged.replace('UID', uid);
          browser.jar.set('usher_reauth', value);
          await isLoginPage(browser, await browser.navigate(page), `first visit with usher_reauth=${value}`);
          await isLoginPage(browser, await browser.navigate(page), `second visit with usher_reauth=${value}`);
          browser.jar.delete('usher_reauth');

          // The person signs in with their password: that, and only that, finishes it.
          const claims = await signInAndFinish(t, browser, user, config, authorization, page);
          assert.equal(claims.sub, sub);
          assert.ok(
            claims.auth_time! >= requestedAt,
            `auth_time ${claims.auth_time} before the request ${requestedAt}`,
          );
          assert.ok(claims.auth_time! > earlierAuthTime);
          assert.deepEqual(claims.amr, ['pwd']);
        }
      });

  test('prompt=login: a first visit without the session cookie, then with it, does not count the old session', async () => {
    const t = apps.b;
    const { user, sub, config, browser } = await signedInEarlier(t);
    const requestedAt = Math.floor(Date.now() / 1000);
    const authorization = await authorizationRequest(config, { prompt: 'login' });
    const { page } = await toLoginPage(browser, authorization);
    const session = browser.jar.get('usher_session')!;
    browser.jar.delete('usher_session');
    await isLoginPage(browser, await browser.navigate(page), 'first visit without a session');
    browser.jar.set('usher_session', session);
    await isLoginPage(
      browser,
      await browser.navigate(page),
      'the session made before the request, shown later',
    );

    const claims = await signInAndFinish(t, browser, user, config, authorization, page);
    assert.equal(claims.sub, sub);
    assert.ok(claims.auth_time! >= requestedAt);
    assert.deepEqual(claims.amr, ['pwd']);
  });

  test('prompt=login: another session made before the first visit, put in the browser after it, does not count', async () => {
    const t = apps.b;
    const { user, config, browser } = await signedInEarlier(t);
    const other = await browserSignedIn(t, user, -1000);
    const authorization = await authorizationRequest(config, { prompt: 'login' });
    const { page } = await toLoginPage(browser, authorization);
    await isLoginPage(browser, await browser.navigate(page), 'first visit');
    browser.jar.set('usher_session', other.jar.get('usher_session')!);
    await isLoginPage(browser, await browser.navigate(page), 'a session from before the first visit');
  });

  test('prompt=login: the session the browser had at the first visit never counts, even stamped later by a clock ahead', async () => {
    // Another instance's clock a few seconds ahead stamped the session after this instance's first visit.
    const t = apps.b;
    const user = newUser();
    await register(t, user);
    const config = await relyingParty(t, await addClient(t, { firstParty: true }));
    const browser = await browserSignedIn(t, user, 5000);
    const authorization = await authorizationRequest(config, { prompt: 'login' });
    const { page } = await toLoginPage(browser, authorization);
    await isLoginPage(browser, await browser.navigate(page), 'first visit');
    await isLoginPage(
      browser,
      await browser.navigate(page),
      'the same session, stamped after the first visit',
    );
  });

  test('max_age: a session older than it never stands, on any visit; a new sign-in within it does', async () => {
    const t = apps.b;
    const { user, sub, config, browser } = await signedInEarlier(t);
    const requestedAt = Math.floor(Date.now() / 1000);
    const authorization = await authorizationRequest(config, { max_age: '30' });
    const { uid, page } = await toLoginPage(browser, authorization);
    browser.jar.set('usher_reauth', `${uid}.-`);
    await isLoginPage(browser, await browser.navigate(page), 'a session a minute old, max_age 30');
    await isLoginPage(browser, await browser.navigate(page), 'again');
    browser.jar.delete('usher_reauth');

    const claims = await signInAndFinish(t, browser, user, config, authorization, page, 30);
    assert.equal(claims.sub, sub);
    assert.ok(claims.auth_time! >= requestedAt);
    assert.deepEqual(claims.amr, ['pwd']);
  });

  test('without prompt=login or max_age the session stands as before: no page, its auth_time, and nothing noted', async () => {
    const t = apps.b;
    const { sub, config, browser, earlierAuthTime } = await signedInEarlier(t);
    const authorization = await authorizationRequest(config);
    const straight = await browser.navigate(authorization.url.href);
    assert.ok(straight.leftTo, `no page (${straight.status})`);
    const claims = (await exchange(config, authorization, straight.leftTo)).claims()!;
    assert.equal(claims.sub, sub);
    assert.equal(claims.auth_time, earlierAuthTime);
    assert.deepEqual(claims.amr, ['pwd']);

    // A browser without a session is sent to the login page for want of one: nothing is noted.
    const fresh = new CookieBrowser(t.base);
    const { uid } = await toLoginPage(fresh, await authorizationRequest(config));
    await fresh.navigate(`/oidc/interaction/${uid}`);
    assert.equal(await baselineRows(t, uid), 0, 'a login that may use any session notes nothing');
  });

  /** The rows of oidc_login_baselines for an interaction, read from the app's database. */
  async function baselineRows(t: OidcTestApp, uid: string) {
    const database = openDatabase(t.config.databaseUrl, t.config.database);
    try {
      const rows = await database.db
        .selectFrom('oidc_login_baselines')
        .select('uid')
        .where('uid', '=', uid)
        .execute();
      return rows.length;
    } finally {
      await database.close();
    }
  }

  test('the baseline: one row per interaction however often the page is visited, purged by the housekeeping once expired', async () => {
    const t = apps.b;
    const { config, browser } = await signedInEarlier(t);
    const { uid, page } = await toLoginPage(browser, await authorizationRequest(config, { prompt: 'login' }));
    await Promise.all(Array.from({ length: 5 }, () => browser.navigate(page)));
    await browser.navigate(page);
    const database = openDatabase(t.config.databaseUrl, t.config.database);
    try {
      const rows = await database.db
        .selectFrom('oidc_login_baselines')
        .selectAll()
        .where('uid', '=', uid)
        .execute();
      assert.equal(rows.length, 1);
      const ttl = Number(rows[0]!.expires_ms) - Date.now();
      assert.ok(ttl > 0 && ttl <= 10 * 60_000, `expires with the interaction (in ${ttl} ms)`);

      const services = compose(t.config, database);
      const gone = `expired-${randomBytes(8).toString('hex')}`;
      await services.oidc.baselines.note(gone, {
        seenMs: Date.now() - 700_000,
        sessionId: null,
        expiresMs: Date.now() - 100_000,
      });
      await housekeeping(services);
      const left = await database.db
        .selectFrom('oidc_login_baselines')
        .select('uid')
        .where('uid', 'in', [uid, gone])
        .execute();
      assert.deepEqual(
        left.map((row) => row.uid),
        [uid],
        'the expired row is gone, the live one stays',
      );
    } finally {
      await database.close();
    }
  });
});
