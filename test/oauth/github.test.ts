// Sign in with GitHub (CONTRACT "Sign in with a provider": the github preset, OAuth 2.0 and not
// OpenID Connect; identity from its user API; the email only if primary and verified;
// OAUTH_GITHUB_URL and OAUTH_GITHUB_API_URL). GitHub itself cannot be reached here: a stand-in
// (test/helpers/github-standin.ts) plays it as documented, checking the client, the code, the
// redirect URI and the PKCE verifier. Covered: a new account from the primary verified email, the
// same account by GitHub's numeric id after a rename, no primary verified email (OAUTH_FAILED),
// Cancel, code injection defeated by PKCE, GitHub's 200-with-error answers, linking by verified
// email, and the provider list in OAUTH_PROVIDERS order.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { Config, Profile } from '../../src/config.ts';
import { loadConfig } from '../../src/config.ts';
import { NO_THROTTLE, startApp } from '../helpers/app.ts';
import { type GithubAccount, type GithubStandin, startGithubStandin } from '../helpers/github-standin.ts';
import { mailTo } from '../helpers/mail.ts';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.ts';
import { freePort } from '../helpers/process.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore, type Store } from '../helpers/stores.ts';
import {
  account,
  assertRefused,
  assertSignedIn,
  Browser,
  databaseText,
  ENCRYPTION_KEY,
  oauthSettings,
  PROFILES,
  PROVIDER_NAME,
  type Usher,
  verifiedUser,
} from './support.ts';

const GH_CLIENT = 'gh-client';
const GH_SECRET = 'gh-secret';

describeEachStore('Sign in with GitHub (stand-in)', (store) => {
  let github: GithubStandin;
  let smtp: TestSmtp;
  const apps = {} as Record<Profile, Usher & { clientId: string }>;
  /** Configured with the wrong client secret. */
  let misconfigured: Usher;

  /** A Usher listening at its PUBLIC_URL with the github preset pointed at the stand-in. */
  // A GitHub OAuth app has one callback URL: each Usher (its own port) is an app of its own.
  async function githubUsher(s: Store, profile: Profile, secret = GH_SECRET, extra: Partial<Config> = {}) {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const callback = `${base}/api/oauth/github/callback`;
    const clientId = `${GH_CLIENT}-${port}`;
    github.addApp({ client_id: clientId, client_secret: GH_SECRET, redirect_uri: callback });
    const oauth = loadConfig({
      OAUTH_PROVIDERS: 'github',
      OAUTH_GITHUB_CLIENT_ID: clientId,
      OAUTH_GITHUB_CLIENT_SECRET: secret,
      OAUTH_GITHUB_URL: github.url,
      OAUTH_GITHUB_API_URL: github.apiUrl,
      OAUTH_TIMEOUT_SECONDS: '2',
    }).oauth;
    const t = await startApp(s, profile, {
      oauth,
      publicUrl: base,
      throttle: { ...NO_THROTTLE },
      encryptionKey: ENCRYPTION_KEY,
      mail: mailTo(smtp.url),
      ...extra,
    });
    await t.app.listen({ host: '127.0.0.1', port });
    return { t, base, callback, clientId };
  }

  before(async () => {
    github = await startGithubStandin();
    smtp = await startSmtp();
    for (const profile of PROFILES) apps[profile] = await githubUsher(store, profile);
    misconfigured = await githubUsher(store, 'b', 'not-the-secret');
  });
  after(async () => {
    for (const u of [apps.a, apps.b, misconfigured]) await u?.t.close();
    await github?.close();
    await smtp?.close();
  });

  let ids = 0;
  function githubAccount(emails?: GithubAccount['emails']): GithubAccount {
    ids += 1;
    const id = 7_000_000 + ids * 13 + (process.pid % 1000) * 100_000;
    const login = `octo${ids}-${process.pid}`;
    return {
      id,
      login,
      name: `Octo ${ids}`,
      emails: emails ?? [
        { email: `${login}@public.example`, primary: false, verified: true },
        { email: `${login}@primary.example`, primary: true, verified: true },
      ],
    };
  }
  const userCount = async () => Number((await apps.b.t.get('/api/users?size=1')).headers['x-total-count']);

  /** Start, the stand-in's page (Authorize or Cancel), then the callback, in `browser`. */
  async function githubFlow(
    usher: Usher,
    person: GithubAccount,
    options: { browser?: Browser; cancel?: boolean; intent?: 'link' } = {},
  ) {
    const browser = options.browser ?? new Browser();
    github.signIn(person);
    const start = await browser.start(usher, { redirectTo: '/account', intent: options.intent }, 'github');
    assert.equal(start.status, 302, await start.text());
    const authorization = new URL(start.headers.get('location')!);
    const location = await github.authorize(authorization.href, { cancel: options.cancel });
    return { authorization, callbackUrl: new URL(location), ...(await browser.callback(usher, location)) };
  }

  for (const profile of PROFILES) {
    test(`[${profile}] a new GitHub identity makes an account with its primary verified email and name; GitHub's id (not the login or email) keeps it`, async () => {
      const usher = apps[profile];
      const person = githubAccount();
      const before = await userCount();
      const flow = await githubFlow(usher, person);
      const token = await assertSignedIn(usher, flow);
      assert.equal(await userCount(), before + 1);
      const me = await account(usher.t, token);
      assert.equal(me.user.email, `${person.login}@primary.example`, 'the primary verified one');
      assert.equal(me.user.name, person.name);
      assert.equal(me.password, false);
      assert.equal(me.identities.length, 1);
      assert.equal(me.identities[0]!.provider, 'github');
      const shown = await apps.b.t.get(`/api/users/${me.user.id}`);
      assert.equal(shown.json().emailVerified, true);

      // Renamed at GitHub, with another primary email: the same account (by the numeric id).
      const renamed = {
        ...person,
        login: `${person.login}-renamed`,
        emails: [{ email: `renamed.${person.login}@primary.example`, primary: true, verified: true }],
      };
      const again = await assertSignedIn(usher, await githubFlow(usher, renamed));
      assert.equal((await account(usher.t, again)).user.id, me.user.id);
      assert.equal(await userCount(), before + 1);
    });
  }

  test('the web flow as GitHub wants it: S256 challenge and exact redirect URI at authorize; secret, code, redirect URI and the matching verifier at the exchange; Bearer and User-Agent at the API', async () => {
    const usher = apps.a;
    const tokensBefore = github.tokenRequests.length;
    const apiBefore = github.apiRequests.length;
    const flow = await githubFlow(usher, githubAccount());
    await assertSignedIn(usher, flow);
    const q = flow.authorization.searchParams;
    assert.equal(
      `${flow.authorization.origin}${flow.authorization.pathname}`,
      `${github.url}/login/oauth/authorize`,
    );
    assert.equal(q.get('client_id'), usher.clientId);
    assert.equal(q.get('redirect_uri'), usher.callback);
    assert.equal(q.get('code_challenge_method'), 'S256');
    assert.ok((q.get('state') ?? '').length >= 22);
    const exchanges = github.tokenRequests.slice(tokensBefore);
    assert.equal(exchanges.length, 1);
    const sent = exchanges[0]!;
    assert.equal(sent.refused, undefined);
    assert.equal(sent.params.client_secret, GH_SECRET);
    assert.equal(sent.params.code, flow.callbackUrl.searchParams.get('code'));
    assert.equal(sent.params.redirect_uri, usher.callback);
    assert.equal(
      createHash('sha256')
        .update(sent.params.code_verifier ?? '')
        .digest('base64url'),
      q.get('code_challenge'),
    );
    assert.match(sent.accept ?? '', /application\/json/);
    const calls = github.apiRequests.slice(apiBefore);
    assert.deepEqual(new Set(calls.map((c) => c.path)), new Set(['/user', '/user/emails']));
    const issued = github.issued.at(-1)!;
    for (const call of calls) {
      assert.match(call.authorization ?? '', new RegExp(`^(Bearer|token) ${issued}$`, 'i'));
      assert.ok(call.userAgent, 'a User-Agent, which GitHub requires');
    }
    assert.ok(!usher.t.logs.join('').includes(issued), 'the access token is not logged');
    const code = flow.callbackUrl.searchParams.get('code')!;
    assert.ok(!usher.t.logs.join('').includes(code), 'the code is not logged');
    const stored = await databaseText(store);
    assert.ok(!stored.includes(issued), 'the access token is not kept');
    assert.ok(!stored.includes(code), 'the code is not kept');
  });

  test('no primary verified email (a verified one that is not primary, a primary one unverified, none at all): OAUTH_FAILED, no account', async () => {
    const usher = apps.b;
    for (const emails of [
      [
        { email: 'second@x.example', primary: false, verified: true },
        { email: 'first@x.example', primary: true, verified: false },
      ],
      [],
    ]) {
      const before = await userCount();
      const flow = await githubFlow(usher, githubAccount(emails));
      await assertRefused(usher, flow, 'OAUTH_FAILED');
      assert.equal(await userCount(), before);
    }
  });

  test('Cancel at GitHub: OAUTH_DENIED', async () => {
    const usher = apps.a;
    await assertRefused(usher, await githubFlow(usher, githubAccount(), { cancel: true }), 'OAUTH_DENIED');
  });

  test('code injection: an attacker’s code brought with the victim’s state fails at GitHub on the PKCE verifier: OAUTH_FAILED', async () => {
    const usher = apps.b;
    const victim = new Browser();
    github.signIn(githubAccount());
    const victimStart = await victim.start(usher, {}, 'github');
    const victimBack = new URL(await github.authorize(victimStart.headers.get('location')!));
    const attacker = new Browser();
    github.signIn(githubAccount());
    const attackerStart = await attacker.start(usher, {}, 'github');
    const attackerBack = new URL(await github.authorize(attackerStart.headers.get('location')!));
    const injected = new URL(victimBack);
    injected.searchParams.set('code', attackerBack.searchParams.get('code')!);
    const before = github.tokenRequests.length;
    await assertRefused(usher, await victim.callback(usher, injected), 'OAUTH_FAILED');
    const exchange = github.tokenRequests.slice(before);
    assert.equal(exchange.length, 1);
    assert.equal(exchange[0]!.refused, 'bad_verification_code', 'GitHub refused the verifier');
  });

  test('GitHub’s errors come as HTTP 200 with an error field (a wrong client secret): OAUTH_FAILED, not a sign-in', async () => {
    const before = github.tokenRequests.length;
    await assertRefused(misconfigured, await githubFlow(misconfigured, githubAccount()), 'OAUTH_FAILED');
    assert.equal(github.tokenRequests.slice(before)[0]?.refused, 'incorrect_client_credentials');
  });

  test('a GitHub primary verified email matching a verified account links to it, with a notice naming GitHub', async () => {
    const usher = apps.b;
    const owner = await verifiedUser(usher.t, smtp);
    const person = githubAccount([{ email: owner.email, primary: true, verified: true }]);
    const token = await assertSignedIn(usher, await githubFlow(usher, person));
    const me = await account(usher.t, token);
    assert.equal(me.user.id, Number(owner.id));
    assert.equal(me.identities[0]?.provider, 'github');
    const mail = await smtp.waitFor((m) => m.to === owner.email && /linked/i.test(m.subject));
    assert.ok(mail.text.includes('GitHub'), mail.text);
  });
});

describeEachStore('Providers in OAUTH_PROVIDERS order', (store) => {
  let provider: TestOidcProvider;
  before(async () => {
    provider = await startOidcProvider();
  });
  after(() => provider?.close());

  test('GET /api/oauth/providers lists github then test, with the preset’s name and OAUTH_TEST_NAME', async () => {
    const t = await startApp(store, 'a', {
      oauth: oauthSettings(provider.issuer, {
        OAUTH_PROVIDERS: 'github,test',
        OAUTH_GITHUB_CLIENT_ID: 'x',
        OAUTH_GITHUB_CLIENT_SECRET: 'y',
        OAUTH_GITHUB_URL: 'http://127.0.0.2:9',
        OAUTH_GITHUB_API_URL: 'http://127.0.0.2:9/api/v3',
      }),
    });
    try {
      const res = await t.get('/api/oauth/providers');
      assert.equal(res.statusCode, 200);
      assert.deepEqual(res.json(), [
        { id: 'github', name: 'GitHub' },
        { id: 'test', name: PROVIDER_NAME },
      ]);
    } finally {
      await t.close();
    }
  });
});
