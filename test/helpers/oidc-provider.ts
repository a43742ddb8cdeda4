// A real OpenID Connect provider for the tests of "Sign in with a provider": panva's oidc-provider
// (the certified implementation), over node:http on a second loopback address (127.0.0.2, so its
// cookies never mix with Usher's on 127.0.0.1 / localhost), issuer http://127.0.0.2:<port>.
//
// What the test controls: the accounts (`setAccount`), the clients (`addClient`), the signing key
// (`jwks`, and `signIdToken` for ID tokens with chosen claims, or signed with a foreign key), a
// provider that stops answering (`hang`), and ID tokens rewritten on their way out of the token
// endpoint (`tamperIdToken`, to show the relying party checks them). Its interaction pages are its
// own minimal ones (devInteractions off): a login page (a labelled `login` field, "Sign in"), then
// a consent page ("Allow", "Cancel"; Cancel ends the interaction with access_denied). PKCE is
// required of every client. `authorize` drives those pages over plain HTTP, as a browser would.
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { decodeJwt, exportJWK, generateKeyPair, type JWK, type JWTPayload, SignJWT } from 'jose';
import { freePort } from './process.ts';

// oidc-provider ships no type declarations (and @types/oidc-provider is not installed): the few
// parts used here are typed below, and the module is imported by a name TypeScript does not resolve.
const OIDC_PROVIDER: string = 'oidc-provider';

interface InteractionDetails {
  uid: string;
  prompt: {
    name: string;
    details: {
      missingOIDCScope?: string[];
      missingOIDCClaims?: string[];
      missingResourceScopes?: Record<string, string[]>;
    };
  };
  params: Record<string, unknown> & { client_id: string };
  session?: { accountId?: string };
  grantId?: string;
}
interface GrantInstance {
  addOIDCScope(scope: string): void;
  addOIDCClaims(claims: string[]): void;
  addResourceScope(indicator: string, scope: string): void;
  save(): Promise<string>;
}
interface OidcProvider {
  callback(): (req: IncomingMessage, res: ServerResponse) => void;
  interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>;
  interactionFinished(
    req: IncomingMessage,
    res: ServerResponse,
    result: Record<string, unknown>,
    options?: { mergeWithLastSubmission?: boolean },
  ): Promise<void>;
  Grant: {
    new (init: { accountId: string; clientId: string }): GrantInstance;
    find(id: string): Promise<GrantInstance | undefined>;
  };
  Client: { adapter: { upsert(id: string, metadata: Record<string, unknown>): Promise<void> } };
  on(event: string, listener: (...args: unknown[]) => void): void;
}
type ProviderConstructor = new (issuer: string, configuration: Record<string, unknown>) => OidcProvider;

/** What the provider knows of a person; `sub` is stable per login unless set. */
export interface ProviderAccount {
  sub: string;
  email?: string;
  email_verified?: boolean;
  name?: string;
}

export interface ProviderClient {
  client_id: string;
  client_secret: string;
  redirect_uris: string[];
}

/** A request to the token endpoint, as the provider received it (for assertions on the relying party). */
export interface TokenRequest {
  /** How the client authenticated: HTTP Basic, client_secret in the body, or not at all. */
  auth: 'basic' | 'post' | 'none';
  clientId: string | undefined;
  params: Record<string, string>;
}

/** A token endpoint answer the provider sent (what a relying party must not keep). */
export interface IssuedTokens {
  access_token?: string;
  id_token?: string;
  refresh_token?: string;
}

export type HangTarget = 'token' | 'discovery' | 'jwks' | 'userinfo' | 'all';

export interface SignOptions {
  /** `provider` (default): the provider's own key; `foreign`: another key under the provider's kid. */
  key?: 'provider' | 'foreign';
  /** `none`: an unsigned token (alg "none"). */
  alg?: 'RS256' | 'none';
  /** The header's kid (default: the provider key's). */
  kid?: string;
}

/** Rewrites the claims of an ID token leaving the token endpoint; may sign with a foreign key. */
export type IdTokenTamper = (claims: JWTPayload) => { claims: JWTPayload; sign?: SignOptions };

export interface AuthorizeOptions {
  /** The login typed on the login page (an account set with setAccount), when the page is shown. */
  login?: string;
  /** The button pressed on the consent page: Allow (default) or Cancel. */
  consent?: 'allow' | 'cancel';
  /** The browser's cookies at the provider (a fresh jar: a browser the provider has never seen). */
  jar?: CookieJar;
}

export interface AuthorizeResult {
  /** Where the provider sent the browser at the end: the relying party's redirect URI with the answer. */
  location: string;
  /**
   * With response_mode=form_post (Apple's): the fields of the form the provider's page posts to
   * `location` (its page submits itself), instead of a redirect.
   */
  form?: Record<string, string>;
  /** Which of the provider's pages were shown, in order ('login', 'consent'). */
  pages: string[];
}

export interface TestOidcProvider {
  readonly issuer: string;
  readonly port: number;
  /** The provider's signing key, private parts included (a JWKS, as given to oidc-provider). */
  readonly jwks: { keys: JWK[] };
  /** Requests to the token endpoint, in order. */
  readonly tokenRequests: TokenRequest[];
  /** Every token endpoint answer, in order. */
  readonly issued: IssuedTokens[];
  setAccount(login: string, account?: Partial<ProviderAccount>): ProviderAccount;
  /** Registers a client (one registered before under that id gains these redirect URIs). */
  addClient(client: ProviderClient): Promise<void>;
  /**
   * An ID token with `claims` over defaults (iss: this issuer, iat: now, exp: in 10 minutes; a claim
   * given as undefined is left out), signed with the provider's key unless `options` says otherwise.
   */
  signIdToken(claims: JWTPayload, options?: SignOptions): Promise<string>;
  /** Makes a part of the provider stop answering (the request stays open) until hang(false). */
  hang(target: HangTarget | false): void;
  /** Rewrites the ID tokens the token endpoint hands out from now on (undefined: stop). */
  tamperIdToken(tamper: IdTokenTamper | undefined): void;
  /**
   * Lets `clientId` authenticate at the token endpoint with a client secret of its own making
   * (Apple's: a JWT signed with the client's key), which `check` accepts; the registered secret is
   * handed on in its place. Other secrets are handed on as they are (and refused).
   */
  acceptClientSecret(clientId: string, check: (secret: string) => boolean): void;
  /** Drives the provider's pages over HTTP from an authorization URL to the redirect back. */
  authorize(url: string, options?: AuthorizeOptions): Promise<AuthorizeResult>;
  /** A genuine ID token from a full code flow for `clientId` (registered here as needed), as a native app gets. */
  genuineIdToken(login: string, clientId: string, options?: { nonce?: string }): Promise<string>;
  close(): Promise<void>;
}

/** A small cookie jar, host-only cookies (ports ignored, as browsers do), paths and expiry honoured. */
export class CookieJar {
  readonly #cookies = new Map<
    string,
    { host: string; name: string; path: string; value: string; expires: number }
  >();

  /** Takes the Set-Cookie headers of a response to `url`. */
  store(url: string | URL, setCookies: readonly string[]): void {
    const target = new URL(url);
    for (const header of setCookies) {
      const [pair = '', ...attributes] = header.split(';');
      const eq = pair.indexOf('=');
      if (eq <= 0) continue;
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      let path = target.pathname.replace(/\/[^/]*$/, '') || '/';
      let expires = Number.POSITIVE_INFINITY;
      for (const attribute of attributes) {
        const [key = '', ...rest] = attribute.split('=');
        const v = rest.join('=').trim();
        const k = key.trim().toLowerCase();
        if (k === 'path' && v.startsWith('/')) path = v;
        else if (k === 'max-age') expires = Date.now() + Number(v) * 1000;
        else if (k === 'expires' && expires === Number.POSITIVE_INFINITY) expires = Date.parse(v);
      }
      const key = `${target.hostname}|${name}|${path}`;
      if (expires <= Date.now()) this.#cookies.delete(key);
      else this.#cookies.set(key, { host: target.hostname, name, path, value, expires });
    }
  }

  /** The Cookie header a browser sends to `url` (undefined when none). */
  header(url: string | URL): string | undefined {
    const target = new URL(url);
    const matching = [...this.#cookies.values()]
      .filter(
        (c) =>
          c.host === target.hostname &&
          c.expires > Date.now() &&
          (target.pathname === c.path ||
            target.pathname.startsWith(c.path.endsWith('/') ? c.path : `${c.path}/`)),
      )
      .sort((a, b) => b.path.length - a.path.length);
    return matching.length === 0 ? undefined : matching.map((c) => `${c.name}=${c.value}`).join('; ');
  }

  /** A cookie's value for `url`'s host (any path). */
  get(url: string | URL, name: string): string | undefined {
    const host = new URL(url).hostname;
    return [...this.#cookies.values()].find((c) => c.host === host && c.name === name)?.value;
  }

  /** Forgets the cookie `name` of `url`'s host (every path). */
  delete(url: string | URL, name: string): void {
    const host = new URL(url).hostname;
    for (const [key, c] of this.#cookies) if (c.host === host && c.name === name) this.#cookies.delete(key);
  }

  /** Forgets every cookie of `url`'s host (as signing out there would). */
  clearHost(url: string | URL): void {
    const host = new URL(url).hostname;
    for (const [key, c] of this.#cookies) if (c.host === host) this.#cookies.delete(key);
  }
}

/** fetch without following redirects, with the jar's cookies sent and the answer's stored. */
export async function fetchWithJar(
  jar: CookieJar,
  url: string,
  init: { method?: string; body?: string; headers?: Record<string, string> } = {},
): Promise<Response> {
  const cookie = jar.header(url);
  const res = await fetch(url, {
    method: init.method ?? 'GET',
    redirect: 'manual',
    headers: {
      ...(cookie === undefined ? {} : { cookie }),
      ...(init.body === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded' }),
      ...init.headers,
    },
    ...(init.body === undefined ? {} : { body: init.body }),
  });
  jar.store(url, res.headers.getSetCookie());
  return res;
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>
<body><main>${body}</main></body></html>`;
}

function loginPage(uid: string, clientId: string, error?: string): string {
  return page(
    'Test provider: sign in',
    `<h1>Sign in to continue to ${escapeHtml(clientId)}</h1>
${error ? `<p role="alert">${escapeHtml(error)}</p>` : ''}
<form method="post" action="/interaction/${uid}/login">
  <label for="login">login</label>
  <input id="login" name="login" autocomplete="username" required autofocus>
  <button type="submit">Sign in</button>
</form>
<form method="post" action="/interaction/${uid}/abort"><button type="submit">Cancel</button></form>`,
  );
}

function consentPage(uid: string, clientId: string, scopes: string[]): string {
  return page(
    'Test provider: allow access',
    `<h1>Allow ${escapeHtml(clientId)} to see ${escapeHtml(scopes.join(', ') || 'your account')}?</h1>
<form method="post" action="/interaction/${uid}/confirm"><button type="submit">Allow</button></form>
<form method="post" action="/interaction/${uid}/abort"><button type="submit">Cancel</button></form>`,
  );
}

/** A request like `req` whose body is `body` (read afresh by whoever reads it). */
function replay(req: IncomingMessage, body: string): IncomingMessage {
  const bytes = Buffer.from(body);
  return Object.assign(Readable.from([bytes]), {
    headers: { ...req.headers, 'content-length': String(bytes.length) },
    rawHeaders: req.rawHeaders,
    method: req.method,
    url: req.url,
    socket: req.socket,
    connection: req.socket,
    httpVersion: req.httpVersion,
    httpVersionMajor: req.httpVersionMajor,
    httpVersionMinor: req.httpVersionMinor,
  }) as unknown as IncomingMessage;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * oidc-provider's storage (its adapter interface), in memory: what its quick-start adapter does,
 * written out so that the provider does not warn about using that one.
 */
function memoryAdapter() {
  const store = new Map<string, { payload: Record<string, unknown>; expires: number }>();
  const grants = new Map<string, Set<string>>();
  return class MemoryStore {
    readonly #name: string;
    constructor(name: string) {
      this.#name = name;
    }
    #key(id: string) {
      return `${this.#name}:${id}`;
    }
    async upsert(id: string, payload: Record<string, unknown>, expiresIn?: number) {
      const key = this.#key(id);
      store.set(key, {
        payload,
        expires: expiresIn ? Date.now() + expiresIn * 1000 : Number.POSITIVE_INFINITY,
      });
      const grantId = payload.grantId;
      if (typeof grantId === 'string') {
        if (!grants.has(grantId)) grants.set(grantId, new Set());
        grants.get(grantId)!.add(key);
      }
    }
    async find(id: string) {
      const entry = store.get(this.#key(id));
      if (!entry || entry.expires <= Date.now()) return undefined;
      return entry.payload;
    }
    async findByUid(uid: string) {
      for (const { payload, expires } of store.values())
        if (payload.uid === uid && expires > Date.now()) return payload;
      return undefined;
    }
    async findByUserCode(userCode: string) {
      for (const { payload, expires } of store.values())
        if (payload.userCode === userCode && expires > Date.now()) return payload;
      return undefined;
    }
    async consume(id: string) {
      const entry = store.get(this.#key(id));
      if (entry) entry.payload.consumed = Math.floor(Date.now() / 1000);
    }
    async destroy(id: string) {
      store.delete(this.#key(id));
    }
    async revokeByGrantId(grantId: string) {
      for (const key of grants.get(grantId) ?? []) store.delete(key);
      grants.delete(grantId);
    }
  };
}

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

export interface StartOidcProviderOptions {
  clients?: ProviderClient[];
  /** The port on 127.0.0.2 (default: a free one). */
  port?: number;
}

export async function startOidcProvider(options: StartOidcProviderOptions = {}): Promise<TestOidcProvider> {
  const port = options.port ?? (await freePort());
  const issuer = `http://127.0.0.2:${port}`;

  const kid = `test-${randomBytes(4).toString('hex')}`;
  const own = await generateKeyPair('RS256', { extractable: true });
  const foreign = await generateKeyPair('RS256', { extractable: true });
  const privateJwk: JWK = { ...(await exportJWK(own.privateKey)), kid, alg: 'RS256', use: 'sig' };
  const jwks = { keys: [privateJwk] };

  const accounts = new Map<string, ProviderAccount>(); // by login
  const bySub = new Map<string, ProviderAccount>();
  const tokenRequests: TokenRequest[] = [];
  const issued: IssuedTokens[] = [];
  let hanging: HangTarget | false = false;
  const held = new Set<ServerResponse>();
  let tamper: IdTokenTamper | undefined;

  const { default: Provider } = (await import(OIDC_PROVIDER)) as { default: ProviderConstructor };
  const provider = new Provider(issuer, {
    // Clients live in the adapter (added below), so that addClient can change them later.
    clients: [],
    adapter: memoryAdapter(),
    jwks,
    ttl: {
      AccessToken: 600,
      AuthorizationCode: 60,
      Grant: 3600,
      IdToken: 600,
      Interaction: 600,
      Session: 3600,
    },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    // Its own interaction pages below, not the development ones. (RFC 9207's iss is in every
    // authorization response, and discovery says so.)
    features: { devInteractions: { enabled: false }, userinfo: { enabled: true } },
    pkce: { required: () => true },
    // Scope claims in the ID token too (a relying party may read them there or at userinfo).
    conformIdTokenClaims: false,
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['name'],
    },
    scopes: ['openid', 'email', 'profile', 'offline_access'],
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    findAccount: async (_ctx: unknown, sub: string) => {
      const account = bySub.get(sub);
      if (!account) return undefined;
      return {
        accountId: sub,
        claims: async () => ({
          sub,
          ...(account.email === undefined ? {} : { email: account.email }),
          ...(account.email_verified === undefined ? {} : { email_verified: account.email_verified }),
          ...(account.name === undefined ? {} : { name: account.name }),
        }),
      };
    },
    renderError: async (ctx: { type: string; body: string }, out: Record<string, string>) => {
      ctx.type = 'html';
      ctx.body = page('Test provider: error', `<h1>Error</h1><pre>${escapeHtml(JSON.stringify(out))}</pre>`);
    },
  });
  provider.on('server_error', (_ctx, error) => console.error('oidc-provider server_error', error));
  const handle = provider.callback();

  function clientMetadata(client: ProviderClient): Record<string, unknown> {
    return {
      client_id: client.client_id,
      client_secret: client.client_secret,
      redirect_uris: client.redirect_uris,
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    };
  }

  const hangs = (req: IncomingMessage, path: string): boolean => {
    if (hanging === false) return false;
    if (hanging === 'all') return true;
    if (hanging === 'token') return req.method === 'POST' && path === '/token';
    if (hanging === 'discovery') return path.startsWith('/.well-known/');
    if (hanging === 'jwks') return path === '/jwks';
    return path === '/me';
  };

  async function interaction(req: IncomingMessage, res: ServerResponse, path: string, body: string) {
    const [, , uid, action] = path.split('/');
    const details = await provider.interactionDetails(req, res);
    if (details.uid !== uid) throw new Error('interaction mismatch');
    const clientId = details.params.client_id;
    if (req.method === 'GET' && action === undefined) {
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end(
        details.prompt.name === 'login'
          ? loginPage(uid, clientId)
          : consentPage(uid, clientId, String(details.params.scope ?? '').split(' ')),
      );
      return;
    }
    if (req.method !== 'POST') throw new Error('method not allowed');
    const form = new URLSearchParams(body);
    if (action === 'abort') {
      await provider.interactionFinished(
        req,
        res,
        { error: 'access_denied', error_description: 'End-User aborted interaction' },
        { mergeWithLastSubmission: false },
      );
      return;
    }
    if (action === 'login') {
      const account = accounts.get(form.get('login') ?? '');
      if (!account) {
        res.statusCode = 200;
        res.setHeader('content-type', 'text/html; charset=utf-8');
        res.end(loginPage(uid, clientId, 'No such login at this provider.'));
        return;
      }
      await provider.interactionFinished(
        req,
        res,
        { login: { accountId: account.sub } },
        { mergeWithLastSubmission: false },
      );
      return;
    }
    if (action === 'confirm') {
      const accountId = details.session?.accountId;
      if (!accountId) throw new Error('consent without a login');
      const grant = details.grantId
        ? await provider.Grant.find(details.grantId)
        : new provider.Grant({ accountId, clientId });
      if (!grant) throw new Error('grant not found');
      const missing = details.prompt.details;
      if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
      if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
      for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {}))
        grant.addResourceScope(indicator, scopes.join(' '));
      const grantId = await grant.save();
      await provider.interactionFinished(
        req,
        res,
        { consent: details.grantId ? {} : { grantId } },
        { mergeWithLastSubmission: true },
      );
      return;
    }
    throw new Error('unknown interaction action');
  }

  /** Records a token request; normalises client_secret_post to Basic (see below). */
  function tokenRequest(req: IncomingMessage, body: string): string {
    const params = Object.fromEntries(new URLSearchParams(body));
    const basic = /^Basic (.+)$/i.exec(req.headers.authorization ?? '');
    let clientId = params.client_id;
    let auth: TokenRequest['auth'] = 'none';
    if (basic) {
      auth = 'basic';
      clientId = decodeURIComponent(Buffer.from(basic[1]!, 'base64').toString().split(':')[0] ?? '');
    } else if (params.client_secret !== undefined) {
      auth = 'post';
    }
    tokenRequests.push({ auth, clientId, params });
    // Real providers (Google, Microsoft, …) take the client secret either way; oidc-provider takes
    // one registered method per client. A secret in the body is handed on as HTTP Basic, so both
    // ways a relying party may choose work here as they do there.
    if (auth === 'post' && params.client_id !== undefined) {
      const { client_id, client_secret: sent, ...rest } = params;
      const check = secretChecks.get(client_id);
      const client_secret =
        check && sent !== undefined && check(sent) ? registered.get(client_id)?.client_secret : sent;
      req.headers.authorization = `Basic ${Buffer.from(
        `${encodeURIComponent(client_id)}:${encodeURIComponent(client_secret ?? '')}`,
      ).toString('base64')}`;
      return new URLSearchParams(rest).toString();
    }
    return body;
  }

  /** Watches (and, when asked, rewrites) the token endpoint's answer. */
  function watchTokenAnswer(res: ServerResponse) {
    const end = res.end.bind(res) as (chunk?: unknown) => ServerResponse;
    res.end = ((chunk?: unknown) => {
      void (async () => {
        let out = chunk;
        try {
          const text = Buffer.isBuffer(chunk)
            ? chunk.toString('utf8')
            : typeof chunk === 'string'
              ? chunk
              : '';
          const json = JSON.parse(text) as IssuedTokens & Record<string, unknown>;
          if (json.id_token && tamper) {
            const changed = tamper(decodeJwt(json.id_token));
            json.id_token = await sign(changed.claims, changed.sign);
            out = JSON.stringify(json);
            if (!res.headersSent) res.setHeader('content-length', Buffer.byteLength(out as string));
          }
          if (json.access_token || json.id_token) {
            issued.push({
              access_token: json.access_token,
              id_token: json.id_token,
              refresh_token: json.refresh_token,
            });
          }
        } catch {
          // not JSON: an error page, passed on as it is
        }
        end(out);
      })();
      return res;
    }) as typeof res.end;
  }

  const server: Server = createServer((req, res) => {
    void (async () => {
      const path = new URL(req.url ?? '/', issuer).pathname;
      if (hangs(req, path)) {
        held.add(res);
        res.on('close', () => held.delete(res));
        return;
      }
      try {
        if (req.method === 'POST') {
          let body = await readBody(req);
          if (path === '/token') {
            body = tokenRequest(req, body);
            watchTokenAnswer(res);
          }
          if (path.startsWith('/interaction/')) return await interaction(req, res, path, body);
          // The body was read here: the provider reads it again from a request that replays it.
          return handle(replay(req, body), res);
        } else if (path.startsWith('/interaction/')) {
          return await interaction(req, res, path, '');
        }
        handle(req, res);
      } catch (error) {
        if (!res.headersSent) {
          res.statusCode = 400;
          res.setHeader('content-type', 'text/html; charset=utf-8');
        }
        res.end(page('Test provider: error', `<pre>${escapeHtml(String(error))}</pre>`));
      }
    })();
  });
  server.listen(port, '127.0.0.2');
  await once(server, 'listening');

  async function sign(claims: JWTPayload, options: SignOptions = {}): Promise<string> {
    const header = { alg: options.alg ?? 'RS256', kid: options.kid ?? kid, typ: 'JWT' };
    if (header.alg === 'none') return `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url(claims)}.`;
    const key = options.key === 'foreign' ? foreign.privateKey : own.privateKey;
    return new SignJWT(claims).setProtectedHeader(header).sign(key);
  }

  const registered = new Map<string, ProviderClient>();
  const secretChecks = new Map<string, (secret: string) => boolean>();
  /** Registers a client; a client id registered before keeps its redirect URIs and gains these. */
  async function addClient(client: ProviderClient) {
    const before = registered.get(client.client_id);
    const merged = {
      ...client,
      redirect_uris: [...new Set([...(before?.redirect_uris ?? []), ...client.redirect_uris])],
    };
    registered.set(client.client_id, merged);
    await provider.Client.adapter.upsert(client.client_id, clientMetadata(merged));
  }

  for (const client of options.clients ?? []) await addClient(client);

  async function authorize(url: string, opts: AuthorizeOptions = {}): Promise<AuthorizeResult> {
    const jar = opts.jar ?? new CookieJar();
    const pages: string[] = [];
    let next = { url, method: 'GET', body: undefined as string | undefined };
    for (let step = 0; step < 12; step++) {
      const res = await fetchWithJar(jar, next.url, { method: next.method, body: next.body });
      const location = res.headers.get('location');
      if (res.status >= 300 && res.status < 400 && location) {
        await res.arrayBuffer();
        const target = new URL(location, next.url);
        if (target.origin !== issuer) return { location: target.href, pages };
        next = { url: target.href, method: 'GET', body: undefined };
        continue;
      }
      const html = await res.text();
      // response_mode=form_post: the provider's page posts the answer to the relying party itself.
      if (html.includes('<title>Submitting Callback</title>')) {
        const action = /<form method="post" action="([^"]+)">/.exec(html)?.[1];
        if (!action) throw new Error(`a form_post page without its form: ${html}`);
        const fromHtml = (text: string) =>
          text.replace(/&#(\d+);|&amp;|&quot;|&lt;|&gt;/g, (m, code: string | undefined) =>
            code
              ? String.fromCharCode(Number(code))
              : { '&amp;': '&', '&quot;': '"', '&lt;': '<', '&gt;': '>' }[m]!,
          );
        const form = Object.fromEntries(
          [...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"\/>/g)].map((m) => [
            m[1]!,
            fromHtml(m[2]!),
          ]),
        );
        return { location: fromHtml(action), pages, form };
      }
      if (res.status !== 200) throw new Error(`the provider answered ${res.status} at ${next.url}: ${html}`);
      const forms = [...html.matchAll(/<form method="post" action="([^"]+)">([\s\S]*?)<\/form>/g)].map(
        (m) => ({ action: m[1]!, inner: m[2]! }),
      );
      const button = (text: string) => forms.find((f) => f.inner.includes(`>${text}</button>`));
      if (html.includes('name="login"')) {
        if (pages.at(-1) === 'login') throw new Error(`the provider refused the login ${opts.login}`);
        pages.push('login');
        if (opts.login === undefined) throw new Error('the provider asks for a login and none was given');
        const form = button('Sign in');
        if (!form) throw new Error(`no Sign in button at ${next.url}: ${html}`);
        next = {
          url: new URL(form.action, issuer).href,
          method: 'POST',
          body: new URLSearchParams({ login: opts.login }).toString(),
        };
        continue;
      }
      const consent = button(opts.consent === 'cancel' ? 'Cancel' : 'Allow');
      if (!consent) throw new Error(`an unexpected page at ${next.url}: ${html}`);
      pages.push('consent');
      next = { url: new URL(consent.action, issuer).href, method: 'POST', body: '' };
    }
    throw new Error('too many steps at the provider');
  }

  async function genuineIdToken(login: string, clientId: string, opts: { nonce?: string } = {}) {
    const redirectUri = `http://127.0.0.1:9/${clientId}/callback`;
    const secret = `${clientId}-secret`;
    if (!registered.has(clientId))
      await addClient({ client_id: clientId, client_secret: secret, redirect_uris: [redirectUri] });
    const verifier = randomBytes(32).toString('base64url');
    const url = new URL(`${issuer}/auth`);
    url.search = new URLSearchParams({
      client_id: clientId,
      response_type: 'code',
      redirect_uri: redirectUri,
      scope: 'openid email profile',
      state: randomBytes(8).toString('hex'),
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
      ...(opts.nonce === undefined ? {} : { nonce: opts.nonce }),
    }).toString();
    const { location } = await authorize(url.href, { login });
    const code = new URL(location).searchParams.get('code');
    if (!code) throw new Error(`no code in ${location}`);
    const res = await fetch(`${issuer}/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}`,
      },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: redirectUri,
        code_verifier: verifier,
      }).toString(),
    });
    const json = (await res.json()) as { id_token?: string };
    if (!json.id_token) throw new Error(`no ID token: ${JSON.stringify(json)}`);
    return json.id_token;
  }

  return {
    issuer,
    port,
    jwks,
    tokenRequests,
    issued,
    setAccount(login, account = {}) {
      const full: ProviderAccount = {
        sub: account.sub ?? `sub-${createHash('sha256').update(login).digest('hex').slice(0, 20)}`,
        ...account,
      };
      const old = accounts.get(login);
      if (old) bySub.delete(old.sub);
      accounts.set(login, full);
      bySub.set(full.sub, full);
      return full;
    },
    addClient,
    async signIdToken(claims, signOptions) {
      const now = Math.floor(Date.now() / 1000);
      const merged: JWTPayload = { iss: issuer, iat: now, exp: now + 600, ...claims };
      for (const key of Object.keys(merged)) if (merged[key] === undefined) delete merged[key];
      return sign(merged, signOptions);
    },
    hang(target) {
      hanging = target;
      if (target === false) for (const res of held) res.destroy();
    },
    tamperIdToken(t) {
      tamper = t;
    },
    authorize,
    acceptClientSecret(clientId, check) {
      secretChecks.set(clientId, check);
    },
    genuineIdToken,
    async close() {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      server.close();
      await once(server, 'close').catch(() => {});
    },
  };
}
