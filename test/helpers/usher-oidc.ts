// Usher's own OpenID Connect provider under test: an app that listens on loopback (openid-client
// and jose are real HTTP clients), clients registered through the same service the CLI uses, a
// cookie-keeping "browser" made of fetch for the flows that need no page, and the relying party's
// side done by openid-client itself.
import { randomBytes } from 'node:crypto';
import * as jose from 'jose';
import * as client from 'openid-client';
import type { AppOptions } from '../../src/app.ts';
import type { Config, Profile } from '../../src/config.ts';
import { openDatabase } from '../../src/db/database.ts';
import { compose } from '../../src/features.ts';
import type { NewClient } from '../../src/oidc/clients.ts';
import { NO_THROTTLE, signIn, startApp, type TestApp, testConfig } from './app.ts';
import { freePort } from './process.ts';
import type { Store } from './stores.ts';
import { STEP_MS, totpAt } from './totp.ts';

/** The API audience the test apps issue JWT access tokens for (OIDC_RESOURCES). */
export const API = 'https://api.example.test';
/** A second audience, for tests that tell two APIs apart. */
export const OTHER_API = 'https://other.example.test';
/** ENCRYPTION_KEY of the test apps: one per process, so several apps on one database share it. */
export const OIDC_ENCRYPTION_KEY = randomBytes(32);
/** Where the test clients say they live; nothing listens there (the "browser" stops at it). */
export const REDIRECT_URI = 'http://127.0.0.1:9/callback';
export const POST_LOGOUT_URI = 'http://127.0.0.1:9/signed-out';

export interface OidcTestApp extends TestApp {
  /** http://127.0.0.1:PORT, PUBLIC_URL. */
  readonly base: string;
  /** `${base}/oidc` */
  readonly issuer: string;
  readonly config: Config;
}

/**
 * An app listening on a free loopback port with PUBLIC_URL set to it, OIDC_RESOURCES = API and
 * OTHER_API, the test ENCRYPTION_KEY and no sign-in throttle (overrides replace any of these).
 * `port`: a given port (a second instance of the same PUBLIC_URL cannot share it; tests of two
 * instances give each its own and compare what does not depend on the address).
 */
export async function startOidcApp(
  store: Store,
  profile: Profile,
  overrides: Partial<Config> = {},
  options: Pick<AppOptions, 'clock' | 'features'> & { publicUrl?: string } = {},
): Promise<OidcTestApp> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const config: Partial<Config> = {
    publicUrl: options.publicUrl ?? base,
    oidc: { resources: [API, OTHER_API], accessTokenTtlSeconds: 300 },
    encryptionKey: OIDC_ENCRYPTION_KEY,
    throttle: { ...NO_THROTTLE },
    ...overrides,
  };
  const t = await startApp(store, profile, config, { clock: options.clock, features: options.features });
  await t.app.listen({ port, host: '127.0.0.1' });
  const publicUrl = options.publicUrl ?? base;
  return { ...t, base, issuer: `${publicUrl}/oidc`, config: testConfig(store, profile, config) };
}

/**
 * Registers a client as `usher clients add` does (the same service, on the same database).
 * Defaults: a confidential, third-party client with REDIRECT_URI and POST_LOGOUT_URI.
 */
export async function addClient(
  t: OidcTestApp,
  input: Partial<NewClient> = {},
): Promise<{ clientId: string; clientSecret?: string }> {
  const database = openDatabase(t.config.databaseUrl, t.config.database);
  try {
    const { oidc } = compose(t.config, database);
    return await oidc.clients.add({
      name: 'Test app',
      redirectUris: [REDIRECT_URI],
      postLogoutRedirectUris: [POST_LOGOUT_URI],
      public: false,
      firstParty: false,
      grants: [],
      ...input,
    });
  } finally {
    await database.close();
  }
}

/** openid-client's configuration for a registered client (client_secret_basic, or none for a public one). */
export async function relyingParty(
  t: OidcTestApp,
  registered: { clientId: string; clientSecret?: string },
): Promise<client.Configuration> {
  return client.discovery(
    new URL(t.issuer),
    registered.clientId,
    undefined,
    registered.clientSecret === undefined ? client.None() : client.ClientSecretBasic(registered.clientSecret),
    { execute: [client.allowInsecureRequests] },
  );
}

/** Where a navigation stopped: a page Usher served, or the redirect that leaves Usher (to the app). */
export interface Stop {
  url: string;
  status: number;
  /** The redirect's target when the navigation left Usher's origin (the app's redirect URI). */
  leftTo?: URL;
  body: string;
}

/**
 * A browser without pages: fetch, keeping cookies per host (the whole jar is sent to Usher's
 * origin only), following redirects by hand until it reaches a page or leaves Usher's origin.
 */
export class CookieBrowser {
  readonly jar = new Map<string, string>();
  readonly #origin: string;

  constructor(origin: string) {
    this.#origin = origin;
  }

  get cookieHeader(): string {
    return [...this.jar].map(([name, value]) => `${name}=${value}`).join('; ');
  }

  keep(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair!.indexOf('=');
      const name = pair!.slice(0, at);
      const value = pair!.slice(at + 1);
      if (value === '' || /max-age=0/i.test(line)) this.jar.delete(name);
      else this.jar.set(name, value);
    }
  }

  /** One request to Usher with the jar (a same-origin fetch, as Usher's pages make). */
  async fetch(url: string, init: RequestInit = {}): Promise<Response> {
    const response = await fetch(new URL(url, this.#origin), {
      ...init,
      redirect: 'manual',
      headers: { ...(init.headers as Record<string, string>), cookie: this.cookieHeader },
    });
    this.keep(response);
    return response;
  }

  /** POSTs JSON as Usher's pages do (same origin). */
  async postJson(url: string, body: unknown): Promise<Response> {
    return this.fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: this.#origin, 'sec-fetch-site': 'same-origin' },
      body: JSON.stringify(body),
    });
  }

  /** Signs in with a password as the page would (POST /api/signin): the session cookie is kept. */
  async signIn(user: { email: string; password: string }, code?: string): Promise<Response> {
    return this.postJson('/api/signin', {
      email: user.email,
      password: user.password,
      ...(code ? { code } : {}),
    });
  }

  /** Follows a navigation: redirects on Usher's origin are followed, the first one elsewhere stops it. */
  async navigate(url: string): Promise<Stop> {
    return this.#follow(new URL(url, this.#origin).href, await this.fetch(url));
  }

  /**
   * Submits an HTML form as a browser does (urlencoded, from Usher's own page, with the jar) and
   * follows where it leads, as navigate does.
   */
  async submitForm(action: string, fields: Record<string, string>): Promise<Stop> {
    const response = await this.fetch(action, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        origin: this.#origin,
        'sec-fetch-site': 'same-origin',
      },
      body: new URLSearchParams(fields).toString(),
    });
    return this.#follow(new URL(action, this.#origin).href, response);
  }

  async #follow(url: string, first: Response): Promise<Stop> {
    let current = url;
    let response = first;
    for (let hops = 0; hops < 20; hops++) {
      if (hops > 0) response = await this.fetch(current);
      const location = response.headers.get('location');
      if (response.status >= 300 && response.status < 400 && location) {
        const next = new URL(location, current);
        if (next.origin !== this.#origin) {
          await response.body?.cancel();
          return { url: current, status: response.status, leftTo: next, body: '' };
        }
        await response.body?.cancel();
        current = next.href;
        continue;
      }
      return { url: current, status: response.status, body: await response.text() };
    }
    throw new Error(`more than 20 redirects from ${url}`);
  }
}

/** An authorization request made by openid-client's helpers, with what its callback needs. */
export interface Authorization {
  url: URL;
  verifier: string;
  state: string;
  nonce: string;
}

export async function authorizationRequest(
  config: client.Configuration,
  params: Record<string, string> = {},
): Promise<Authorization> {
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT_URI,
    scope: 'openid email profile',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    nonce,
    ...params,
  });
  return { url, verifier, state, nonce };
}

/** The interaction page's consent, answered as its script does; the navigation goes on from there. */
export async function answerConsent(
  browser: CookieBrowser,
  page: Stop,
  decision: 'allow' | 'deny',
): Promise<Stop> {
  const response = await browser.postJson(`${new URL(page.url).pathname}/consent`, { decision });
  if (response.status !== 200)
    throw new Error(`consent answered ${response.status}: ${await response.text()}`);
  const { location } = (await response.json()) as { location: string };
  return browser.navigate(location);
}

/** The code exchange, by openid-client, of where the browser was sent. */
export function exchange(
  config: client.Configuration,
  authorization: Authorization,
  callback: URL,
  checks: Partial<client.AuthorizationCodeGrantChecks> = {},
): Promise<client.TokenEndpointResponse & client.TokenEndpointResponseHelpers> {
  return client.authorizationCodeGrant(config, callback, {
    pkceCodeVerifier: authorization.verifier,
    expectedState: authorization.state,
    expectedNonce: authorization.nonce,
    ...checks,
  });
}

/** What the interaction page's script reads first: GET /oidc/interaction/{uid}/details. */
export interface InteractionDetails {
  prompt: 'login' | 'consent';
  client: { name: string };
  scopes: string[];
  loginHint?: string;
  signedInAs?: string;
}

export async function interactionDetails(browser: CookieBrowser, page: Stop): Promise<InteractionDetails> {
  const response = await browser.fetch(`${new URL(page.url).pathname}/details`);
  if (response.status !== 200)
    throw new Error(`details answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as InteractionDetails;
}

/** A browser already signed in to Usher with a password (and a TOTP code, when given). */
export async function signedInBrowser(
  t: OidcTestApp,
  user: { email: string; password: string },
  code?: string,
): Promise<CookieBrowser> {
  const browser = new CookieBrowser(t.base);
  const response = await browser.signIn(user, code);
  if (response.status !== 200)
    throw new Error(`sign-in answered ${response.status}: ${await response.text()}`);
  return browser;
}

/**
 * What a browser does with oidc-provider's self-submitting form page ("Submitting Callback": its
 * script posts the form at once): the form is submitted with its hidden fields, and the navigation
 * goes on. Any other stop is returned as it is.
 */
export async function autoSubmit(browser: CookieBrowser, stop: Stop): Promise<Stop> {
  if (stop.leftTo || !stop.body.includes('<title>Submitting Callback</title>')) return stop;
  const action = /<form method="post" action="([^"]+)">/.exec(stop.body)?.[1];
  if (!action) throw new Error(`no form in ${stop.body}`);
  const fields: Record<string, string> = {};
  for (const [, name, value] of stop.body.matchAll(
    /<input type="hidden" name="([^"]+)" value="([^"]*)"\/?>/g,
  ))
    fields[name!] = value!;
  return browser.submitForm(action, fields);
}

/** The action and xsrf token of oidc-provider's sign-out form, as found in the confirm page. */
export function logoutForm(html: string): { action: string; xsrf: string } {
  const form = /<form id="op\.logoutForm" method="post" action="([^"]+)">(.*?)<\/form>/s.exec(html);
  const xsrf = form && /<input type="hidden" name="xsrf" value="([^"]+)"\/?>/.exec(form[2]!);
  if (!form || !xsrf) throw new Error(`no sign-out form in ${html}`);
  return { action: form[1]!, xsrf: xsrf[1]! };
}

/** The JWKS an API would fetch: jose's remote key set at the issuer's jwks_uri, nothing else. */
export function remoteKeys(t: OidcTestApp): ReturnType<typeof jose.createRemoteJWKSet> {
  return jose.createRemoteJWKSet(new URL(`${t.issuer}/jwks`));
}

/**
 * The app's clock: real time moved by `skewMs` (a test sets it back, signs in, then sets it to 0:
 * that sign-in is as old as the skew). Pass `clock.now` as startOidcApp's `clock`.
 */
export class SkewedClock {
  skewMs = 0;
  readonly now = (): number => Date.now() + this.skewMs;
}

/**
 * TOTP put in force for a user through the API (set up with the password, confirmed with a code
 * computed here); the secret is returned to make codes with. The code used to confirm is that of
 * the step before now on the app's clock (moved back for it), so the current step's code is unused.
 */
export async function turnOnTotp(
  t: OidcTestApp,
  user: { email: string; password: string },
  clock: SkewedClock,
): Promise<string> {
  const token = await signIn(t, user);
  const bearer = { authorization: `Bearer ${token}` };
  const setup = await t.post('/api/mfa/totp', { password: user.password }, bearer);
  if (setup.statusCode !== 200) throw new Error(`TOTP setup answered ${setup.statusCode}: ${setup.body}`);
  const { secret } = setup.json() as { secret: string };
  const skew = clock.skewMs;
  clock.skewMs = skew - STEP_MS;
  try {
    const confirm = await t.post('/api/mfa/totp/confirm', { code: totpAt(secret, clock.now()) }, bearer);
    if (confirm.statusCode !== 200)
      throw new Error(`TOTP confirm answered ${confirm.statusCode}: ${confirm.body}`);
  } finally {
    clock.skewMs = skew;
  }
  return secret;
}

/**
 * One authorization by a signed-in browser, to where it sends the browser back: the consent page,
 * when one is shown, is answered "allow" (for tests about something else than consent). Fails on
 * any other page.
 */
export async function authorizeTo(
  browser: CookieBrowser,
  config: client.Configuration,
  params: Record<string, string> = {},
): Promise<{ authorization: Authorization; callback: URL }> {
  const authorization = await authorizationRequest(config, params);
  return {
    authorization,
    callback: await backToApp(browser, await browser.navigate(authorization.url.href)),
  };
}

/** Where a navigation goes back to the app, the consent page (if that is where it stopped) allowed. */
export async function backToApp(browser: CookieBrowser, stop: Stop): Promise<URL> {
  let at = stop;
  if (!at.leftTo && at.status === 200 && (await interactionDetails(browser, at)).prompt === 'consent')
    at = await answerConsent(browser, at, 'allow');
  if (!at.leftTo) throw new Error(`the authorization stopped at ${at.url} (${at.status})`);
  return at.leftTo;
}

/** authorizeTo, then the code exchanged by openid-client. */
export async function authorize(
  browser: CookieBrowser,
  config: client.Configuration,
  params: Record<string, string> = {},
): Promise<client.TokenEndpointResponse & client.TokenEndpointResponseHelpers> {
  const { authorization, callback } = await authorizeTo(browser, config, params);
  return exchange(config, authorization, callback);
}
