// The guides docs/oidc.md and docs/verify-tokens.md, run as a reader would: a real server process
// (PUBLIC_URL its own address, OIDC_RESOURCES as verify-tokens.md sets it, an ENCRYPTION_KEY), the
// `npx usher clients add` lines of the block marked `sh clients-example` run in sh through the CLI,
// the `curl` blocks of verify-tokens.md run in sh, the openid-client example (`js oidc-example`)
// imported as a web app would, and the jose example (`js verify-tokens-example`, with its
// `js verify-tokens-try` script) run by node against real tokens. The examples are written to a
// folder under node_modules/.cache, so they import openid-client and jose as an app would.
//
// What may differ from the guides, and nothing else: https://id.example.com, where the guides put
// Usher, is the test server's address.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as client from 'openid-client';
import { newUser } from '../helpers/app.ts';
import { freePort, type ProcessRun, type ServerProcess, startServer } from '../helpers/process.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { answerConsent, CookieBrowser } from '../helpers/usher-oidc.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = join(ROOT, 'bin', 'usher.mjs');
const OIDC_GUIDE = readFileSync(join(ROOT, 'docs', 'oidc.md'), 'utf8');
const TOKENS_GUIDE = readFileSync(join(ROOT, 'docs', 'verify-tokens.md'), 'utf8');
/** Where the guides say Usher is (its PUBLIC_URL). */
const GUIDE_USHER = 'https://id.example.com';

/** The text of every fenced block whose info string is exactly `info`. */
function fenced(text: string, info: string): string[] {
  const found: string[] = [];
  let inside = false;
  let current: string[] | undefined;
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) {
      if (!inside) current = line.slice(3).trim() === info ? [] : undefined;
      else if (current) found.push(current.join('\n'));
      inside = !inside;
      continue;
    }
    current?.push(line);
  }
  return found;
}

function only(text: string, info: string): string {
  const found = fenced(text, info);
  assert.equal(found.length, 1, `one \`\`\`${info} block`);
  return found[0]!;
}

/** The commands of a shell block: continuation lines joined, comments and blank lines left out. */
function commands(script: string): string[] {
  return script
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

const CLIENT_COMMANDS = commands(only(OIDC_GUIDE, 'sh clients-example')).filter((c) =>
  c.startsWith('npx usher clients add '),
);
const nameOf = (command: string) => /--name (?:"([^"]+)"|(\S+))/.exec(command)?.slice(1).find(Boolean);
const optionValues = (command: string, option: string) =>
  [...command.matchAll(new RegExp(`${option} (\\S+)`, 'g'))].map((m) => m[1]!);

/** The audiences verify-tokens.md configures (its `OIDC_RESOURCES=` line); the example's API is the first. */
const RESOURCES = /^OIDC_RESOURCES=(\S+)$/m.exec(TOKENS_GUIDE)?.[1] ?? '';
const [API, OTHER_API] = RESOURCES.split(',') as [string, string];

interface Registered {
  command: string;
  clientId: string;
  clientSecret?: string;
}

interface WebExample {
  signInUrl(session: Record<string, unknown>): Promise<string>;
  finishSignIn(
    session: Record<string, unknown>,
    currentUrl: string,
  ): Promise<{ claims: Record<string, unknown>; profile: Record<string, unknown>; idToken: string }>;
  signOutUrl(idToken: string): string;
}

interface ApiExample {
  authenticate(request: {
    headers: { authorization?: string };
  }): Promise<Record<string, unknown> | undefined>;
}

/**
 * Runs a command to its end with nothing on its standard input (a pipe written to a process that
 * exits at once can fail with EPIPE), its output read to the end; killed after a minute.
 */
function execute(command: string, args: string[], env: Record<string, string>): Promise<ProcessRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

let scratch: string;
before(() => {
  mkdirSync(join(ROOT, 'node_modules', '.cache'), { recursive: true });
  scratch = mkdtempSync(join(ROOT, 'node_modules', '.cache', 'usher-guides-'));
  writeFileSync(join(scratch, 'usher.mjs'), only(OIDC_GUIDE, 'js oidc-example'));
  writeFileSync(join(scratch, 'verify-token.mjs'), only(TOKENS_GUIDE, 'js verify-tokens-example'));
  writeFileSync(join(scratch, 'check.mjs'), only(TOKENS_GUIDE, 'js verify-tokens-try'));
});
after(() => rmSync(scratch, { recursive: true, force: true }));

let imports = 0;
/** Imports an example afresh (its own module instance) with `env` set while its top level reads it. */
async function importExample<T>(file: string, env: Record<string, string>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(env).map((name) => [name, process.env[name]]));
  Object.assign(process.env, env);
  try {
    imports += 1;
    return (await import(`${pathToFileURL(join(scratch, file)).href}?instance=${imports}`)) as T;
  } finally {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
}

test('the guides hold the blocks this test runs, and their settings agree', () => {
  assert.deepEqual(CLIENT_COMMANDS.map(nameOf), [
    'Example Web',
    'Example SPA',
    'Example Mobile',
    'Example Desktop',
    'Nightly reports',
  ]);
  assert.ok(API?.startsWith('https://') && OTHER_API?.startsWith('https://'), RESOURCES);
  assert.ok(
    only(TOKENS_GUIDE, 'js verify-tokens-example').includes(`?? '${API}'`),
    'the example is for the first API',
  );
  assert.match(only(TOKENS_GUIDE, 'js verify-tokens-try'), /from '\.\/verify-token\.mjs'/);
});

describeEachStore('the guides docs/oidc.md and docs/verify-tokens.md, run as written', (store) => {
  let server: ServerProcess;
  let base: string;
  let env: Record<string, string>;
  before(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    env = {
      DATABASE_URL: store.url,
      PUBLIC_URL: base,
      OIDC_RESOURCES: RESOURCES,
      ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    };
    server = await startServer({ ...env, PORT: String(port) });
  });
  after(() => server.stop());

  /** Runs a shell block of a guide in sh, with Usher at the test server's address. */
  const sh = (script: string, vars: Record<string, string> = {}) =>
    execute('sh', ['-c', script.replaceAll(GUIDE_USHER, base)], { ...env, ...vars });

  /**
   * Runs the guide's `npx usher clients add --name NAME …` line through the CLI (bin/usher.mjs),
   * once per suite: the tests that use an app share it (each with people of its own).
   */
  const registered = new Map<string, Promise<Registered>>();
  function register(name: string): Promise<Registered> {
    let app = registered.get(name);
    if (!app) {
      app = (async () => {
        const command = CLIENT_COMMANDS.find((c) => nameOf(c) === name);
        assert.ok(command, `docs/oidc.md registers "${name}"`);
        const run = await sh(`npx() { shift; "$GUIDE_NODE" "$GUIDE_CLI" "$@"; }\n${command}`, {
          GUIDE_NODE: process.execPath,
          GUIDE_CLI: CLI,
        });
        assert.equal(run.code, 0, `${command}\n${run.stderr}`);
        return { command, ...(JSON.parse(run.stdout) as { clientId: string; clientSecret?: string }) };
      })();
      registered.set(name, app);
    }
    return app;
  }

  /** The jose example's check.mjs, run by node on a token. */
  const check = (token: string) =>
    execute(process.execPath, [join(scratch, 'check.mjs'), token], { USHER_URL: base });

  async function verified(token: string): Promise<Record<string, unknown>> {
    const run = await check(token);
    assert.equal(run.code, 0, run.stderr);
    return JSON.parse(run.stdout) as Record<string, unknown>;
  }

  async function newAccount() {
    const user = newUser();
    const res = await fetch(`${base}/api/users`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(user),
    });
    assert.equal(res.status, 201, await res.clone().text());
    const { id } = (await res.json()) as { id: number };
    return { ...user, id: String(id) };
  }

  async function signedInBrowser() {
    const user = await newAccount();
    const browser = new CookieBrowser(base);
    assert.equal((await browser.signIn(user)).status, 200);
    return { user, browser };
  }

  /** openid-client's configuration for a registered app, as a library of the app would have it. */
  const relyingParty = (app: Registered) =>
    client.discovery(
      new URL(`${base}/oidc`),
      app.clientId,
      undefined,
      app.clientSecret === undefined ? client.None() : client.ClientSecretBasic(app.clientSecret),
      { execute: [client.allowInsecureRequests] },
    );

  /** An authorization request as a native app makes it, answered without following the redirect. */
  async function authorize(app: Registered, redirectUri: string): Promise<Response> {
    const url = new URL(`${base}/oidc/auth`);
    url.search = new URLSearchParams({
      client_id: app.clientId,
      response_type: 'code',
      scope: 'openid',
      redirect_uri: redirectUri,
      code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()),
      code_challenge_method: 'S256',
      state: client.randomState(),
    }).toString();
    return fetch(url, { redirect: 'manual' });
  }

  const alertOf = (html: string) => /role="alert">([^<]*)</.exec(html)?.[1] ?? html.slice(0, 200);

  test('docs/oidc.md: every endpoint it names is in the discovery document, with what it says is supported', async () => {
    const res = await fetch(`${base}/oidc/.well-known/openid-configuration`);
    assert.equal(res.status, 200);
    const discovery = (await res.json()) as Record<string, unknown>;
    const published = new Set(Object.values(discovery).filter((v) => typeof v === 'string'));
    published.add(`${base}/oidc/.well-known/openid-configuration`);
    const named = new Set(
      (OIDC_GUIDE.match(/https:\/\/id\.example\.com\/oidc[^\s`)|?'"]*/g) ?? []).map((url) =>
        url.replace(GUIDE_USHER, base),
      ),
    );
    assert.ok(named.size >= 9, [...named].join(' '));
    for (const url of named) assert.ok(published.has(url), `${url} is not in the discovery document`);
    assert.equal(discovery.issuer, `${base}/oidc`);
    assert.deepEqual(discovery.response_types_supported, ['code']);
    assert.deepEqual(discovery.code_challenge_methods_supported, ['S256']);
    assert.deepEqual(discovery.scopes_supported, ['openid', 'profile', 'email', 'offline_access']);
    assert.ok((discovery.id_token_signing_alg_values_supported as string[]).includes('RS256'));
    assert.ok((discovery.grant_types_supported as string[]).includes('client_credentials'));
    assert.ok(!(discovery.grant_types_supported as string[]).includes('implicit'));
  });

  test('docs/oidc.md: each `npx usher clients add` line registers its app, a secret only for confidential ones', async () => {
    const apps = await Promise.all(CLIENT_COMMANDS.map((command) => register(nameOf(command)!)));
    const listed = await execute(process.execPath, [CLI, 'clients', 'list', '--json'], env);
    assert.equal(listed.code, 0, listed.stderr);
    const clients = listed.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    for (const app of apps) {
      const isPublic = app.command.includes(' --public');
      assert.equal(typeof app.clientSecret, isPublic ? 'undefined' : 'string', app.command);
      const row = clients.find((c) => c.clientId === app.clientId);
      assert.ok(row, `${app.clientId} in clients list`);
      assert.equal(row.name, nameOf(app.command));
      assert.equal(row.public, isPublic);
      assert.deepEqual(row.redirectUris, optionValues(app.command, '--redirect-uri'));
      assert.deepEqual(row.postLogoutRedirectUris, optionValues(app.command, '--post-logout-redirect-uri'));
      assert.deepEqual(
        row.grantTypes,
        app.command.includes('--grant client_credentials')
          ? ['client_credentials']
          : ['authorization_code', 'refresh_token'],
      );
    }
  });

  test('docs/oidc.md: the openid-client example signs a person in to the web app: sign-in page, consent, claims, sign-out', async () => {
    const app = await register('Example Web');
    const web = await importExample<WebExample>('usher.mjs', {
      USHER_ISSUER: `${base}/oidc`,
      USHER_CLIENT_ID: app.clientId,
      USHER_CLIENT_SECRET: app.clientSecret!,
    });
    const user = await newAccount();
    const browser = new CookieBrowser(base);
    const session: Record<string, unknown> = {};

    // No Usher session yet: Usher's sign-in page, naming the app.
    const page = await browser.navigate(await web.signInUrl(session));
    assert.equal(page.status, 200, page.body);
    assert.match(page.url, /\/oidc\/interaction\/[\w-]+$/);
    assert.match(page.body, /<form id="signin"/);
    const details = await (await browser.fetch(`${new URL(page.url).pathname}/details`)).json();
    assert.deepEqual(details, { prompt: 'login', client: { name: 'Example Web' }, scopes: [] });
    // The page signs in through the JSON API, then reloads itself: the app is third-party, so consent.
    assert.equal((await browser.signIn(user)).status, 200);
    const consent = await browser.navigate(page.url);
    assert.equal(consent.status, 200, consent.body);
    const asked = (await (await browser.fetch(`${new URL(consent.url).pathname}/details`)).json()) as {
      prompt: string;
    };
    assert.equal(asked.prompt, 'consent');
    const landed = await answerConsent(browser, consent, 'allow');
    assert.ok(landed.leftTo, 'the browser goes back to the app');
    assert.equal(`${landed.leftTo.origin}${landed.leftTo.pathname}`, 'https://app.example.com/callback');

    const { claims, profile, idToken } = await web.finishSignIn(session, landed.leftTo.href);
    assert.equal(claims.iss, `${base}/oidc`);
    assert.equal(claims.sub, user.id);
    assert.equal(claims.aud, app.clientId);
    assert.deepEqual(claims.amr, ['pwd']);
    assert.equal(typeof claims.auth_time, 'number');
    assert.deepEqual(profile, {
      sub: user.id,
      roles: [],
      name: user.name,
      email: user.email,
      email_verified: false,
    });
    assert.equal(session.verifier, undefined, 'the PKCE verifier is good for one answer');

    // The API's example never takes an ID token for an access token.
    const refused = await check(idToken);
    assert.notEqual(refused.code, 0, refused.stdout);
    assert.match(refused.stderr, /JOSEAlgNotAllowed|JWTClaimValidationFailed/);

    // Sign-out: Usher asks, and "Sign out" ends the Usher session too.
    const ask = await browser.navigate(web.signOutUrl(idToken));
    assert.equal(ask.status, 200, ask.body);
    assert.match(ask.body, /Sign out of Example Web\?/);
    const action = /<form[^>]*action="([^"]+)"/.exec(ask.body)?.[1];
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(ask.body)?.[1];
    assert.ok(action && xsrf, ask.body);
    const confirmed = await browser.fetch(action, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ xsrf, logout: 'yes' }).toString(),
    });
    assert.equal(confirmed.status, 303);
    assert.equal(confirmed.headers.get('location'), 'https://app.example.com/');
    assert.equal((await browser.fetch('/api/session')).status, 401, 'the Usher session has ended');
  });

  test('docs/oidc.md: the SPA (--public --first-party) uses PKCE without a secret, is never asked for consent, and calls the token endpoint from its own origin only', async () => {
    const spa = await register('Example SPA');
    const web = await register('Example Web');
    const [redirectUri] = optionValues(spa.command, '--redirect-uri') as [string];
    const tokenCall = (app: Registered, origin: string) =>
      fetch(`${base}/oidc/token`, {
        method: 'POST',
        headers: { origin, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code: 'not-a-code',
          client_id: app.clientId,
          redirect_uri: redirectUri,
          code_verifier: 'v'.repeat(43),
        }).toString(),
      });
    const spaOrigin = new URL(redirectUri).origin;
    assert.equal((await tokenCall(spa, spaOrigin)).headers.get('access-control-allow-origin'), spaOrigin);
    const foreign = await tokenCall(spa, 'https://elsewhere.example');
    assert.equal(foreign.headers.get('access-control-allow-origin'), null);
    assert.equal(((await foreign.json()) as { error: string }).error, 'invalid_request');
    const confidential = await tokenCall(web, 'https://app.example.com');
    assert.equal(confidential.headers.get('access-control-allow-origin'), null, 'not for a confidential app');
    const jwks = await fetch(`${base}/oidc/jwks`, { headers: { origin: 'https://elsewhere.example' } });
    assert.ok(jwks.headers.get('access-control-allow-origin'), 'the JWKS is readable from any origin');

    const { user, browser } = await signedInBrowser();
    const rp = await relyingParty(spa);
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const url = client.buildAuthorizationUrl(rp, {
      redirect_uri: redirectUri,
      scope: 'openid profile email',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    const landed = await browser.navigate(url.href);
    assert.ok(
      landed.leftTo,
      `a first-party app is never asked for consent, but Usher stopped at ${landed.url} (${landed.status})`,
    );
    const tokens = await client.authorizationCodeGrant(rp, landed.leftTo, {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    assert.equal(tokens.claims()?.sub, user.id);
  });

  test("docs/oidc.md: the mobile app's reverse-domain redirect URI reaches Usher's sign-in page", async () => {
    const mobile = await register('Example Mobile');
    const [redirectUri] = optionValues(mobile.command, '--redirect-uri') as [string];
    assert.match(redirectUri, /^com\.example\.app:\/[^/]/);
    const res = await authorize(mobile, redirectUri);
    const body = await res.text();
    assert.equal(res.status, 303, `refused: ${alertOf(body)}`);
    assert.match(res.headers.get('location') ?? '', /\/oidc\/interaction\/[\w-]+$/);
  });

  test("docs/oidc.md: the desktop app's loopback redirect URI reaches the sign-in page, on any port but nowhere else", async () => {
    const desktop = await register('Example Desktop');
    const [redirectUri] = optionValues(desktop.command, '--redirect-uri') as [string];
    const res = await authorize(desktop, redirectUri);
    const body = await res.text();
    assert.equal(res.status, 303, `refused: ${alertOf(body)}`);
    assert.match(res.headers.get('location') ?? '', /\/oidc\/interaction\/[\w-]+$/);
    // RFC 8252 §7.3: a native app's loopback redirect URI, on whatever port the app got.
    const other = new URL(redirectUri);
    other.port = String(Number(other.port) + 1);
    const otherPort = await authorize(desktop, other.href);
    assert.equal(otherPort.status, 303, 'another port is the same loopback redirect URI');
    await otherPort.body?.cancel();
    const otherPath = new URL(redirectUri);
    otherPath.pathname = '/elsewhere';
    const elsewhere = await authorize(desktop, otherPath.href);
    assert.equal(elsewhere.status, 400, 'another path is another redirect URI');
    assert.match(alertOf(await elsewhere.text()), /redirect_uri/);
  });

  test('docs/oidc.md and verify-tokens.md: offline_access needs prompt=consent; refresh tokens rotate, refresh gives a JWT for the same API, and reuse ends the grant', async () => {
    const app = await register('Example Web');
    const [redirectUri] = optionValues(app.command, '--redirect-uri') as [string];
    const rp = await relyingParty(app);
    const { user, browser } = await signedInBrowser();
    const signIn = async (extra: Record<string, string>) => {
      const verifier = client.randomPKCECodeVerifier();
      const state = client.randomState();
      const url = client.buildAuthorizationUrl(rp, {
        redirect_uri: redirectUri,
        scope: 'openid offline_access',
        resource: API,
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state,
        ...extra,
      });
      let stop = await browser.navigate(url.href);
      if (!stop.leftTo) stop = await answerConsent(browser, stop, 'allow');
      assert.ok(stop.leftTo, stop.body);
      return client.authorizationCodeGrant(rp, stop.leftTo, {
        pkceCodeVerifier: verifier,
        expectedState: state,
      });
    };

    const without = await signIn({});
    assert.equal(without.refresh_token, undefined, 'no refresh token without prompt=consent');
    const first = await signIn({ prompt: 'consent' });
    assert.equal(typeof first.refresh_token, 'string');
    const jwt = await verified(first.access_token);
    assert.equal(jwt.sub, user.id);
    assert.equal(jwt.client_id, app.clientId);
    assert.equal(jwt.aud, API);

    const second = await client.refreshTokenGrant(rp, first.refresh_token!);
    assert.ok(second.refresh_token && second.refresh_token !== first.refresh_token, 'rotated');
    assert.equal((await verified(second.access_token)).aud, API);
    const invalidGrant = (error: unknown) => (error as { error?: string }).error === 'invalid_grant';
    await assert.rejects(client.refreshTokenGrant(rp, first.refresh_token!), invalidGrant);
    await assert.rejects(
      client.refreshTokenGrant(rp, second.refresh_token),
      invalidGrant,
      'the grant is over',
    );
  });

  test("docs/verify-tokens.md: the session-token curl gives a token the jose example accepts, and another API's token it refuses", async () => {
    const user = await newAccount();
    const signin = await fetch(`${base}/api/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: user.email, password: user.password }),
    });
    assert.equal(signin.status, 201);
    const { token: sessionToken } = (await signin.json()) as { token: string };

    const run = await sh(only(TOKENS_GUIDE, 'sh session-token-example'), { SESSION_TOKEN: sessionToken });
    assert.equal(run.code, 0, run.stderr);
    const answer = JSON.parse(run.stdout) as { accessToken: string; tokenType: string; expiresIn: number };
    assert.equal(answer.tokenType, 'Bearer');
    assert.equal(answer.expiresIn, 300);

    const claims = await verified(answer.accessToken);
    assert.equal(claims.iss, `${base}/oidc`);
    assert.equal(claims.sub, user.id);
    assert.equal(claims.aud, API);
    assert.equal(claims.client_id, 'usher');
    assert.equal(claims.scope, 'openid profile email');
    assert.deepEqual(claims.amr, ['pwd']);
    assert.equal(typeof claims.auth_time, 'number');
    assert.equal(typeof claims.jti, 'string');
    assert.equal(Number(claims.exp) - Number(claims.iat), 300);

    const ask = (audience: string) =>
      fetch(`${base}/api/session/token`, {
        method: 'POST',
        headers: { authorization: `Bearer ${sessionToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ audience }),
      });
    const other = await ask(OTHER_API);
    assert.equal(other.status, 200);
    const { accessToken: otherToken } = (await other.json()) as { accessToken: string };
    const refused = await check(otherToken);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /"aud"/);
    const unknown = await ask('https://unknown.example.com');
    assert.equal(unknown.status, 400);
    assert.equal(((await unknown.json()) as { error: string }).error, 'VALIDATION_FAILED');

    // The example's request-handler helper.
    const api = await importExample<ApiExample>('verify-token.mjs', { USHER_URL: base });
    const caller = await api.authenticate({ headers: { authorization: `Bearer ${answer.accessToken}` } });
    assert.equal(caller?.sub, user.id);
    assert.equal(await api.authenticate({ headers: {} }), undefined);
    assert.equal(await api.authenticate({ headers: { authorization: `Bearer ${otherToken}` } }), undefined);
  });

  test('docs/verify-tokens.md: the client_credentials curl gives a token the jose example accepts, whose sub is the client', async () => {
    const service = await register('Nightly reports');
    const run = await sh(only(TOKENS_GUIDE, 'sh client-credentials-example'), {
      CLIENT_ID: service.clientId,
      CLIENT_SECRET: service.clientSecret!,
    });
    assert.equal(run.code, 0, run.stderr);
    const answer = JSON.parse(run.stdout) as { access_token: string; expires_in: number; token_type: string };
    assert.equal(answer.token_type, 'Bearer');
    assert.equal(answer.expires_in, 300);
    const claims = await verified(answer.access_token);
    assert.equal(claims.sub, service.clientId);
    assert.equal(claims.client_id, service.clientId);
    assert.equal(claims.aud, API);
    assert.equal(claims.iss, `${base}/oidc`);
  });
});
