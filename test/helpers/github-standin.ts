// A stand-in for GitHub's OAuth 2.0 web flow and user API, over node:http on 127.0.0.2. GitHub
// itself cannot be reached from where the tests run, and it is not OpenID Connect (no discovery,
// no ID token), so nothing off the shelf plays it: this follows GitHub's documented behaviour
// ("Authorizing OAuth apps", REST "Users" and "Emails"), laid out as GitHub Enterprise Server is
// (web at the base URL, API under /api/v3):
// - GET /login/oauth/authorize: a page with "Authorize" and "Cancel" for the account signed in at
//   "GitHub" (set by the test); Cancel redirects with error=access_denied. The redirect_uri must be
//   the app's callback URL (exactly, stricter than GitHub's sub-path rule).
// - POST /login/oauth/access_token: checks client_id, client_secret, the code (once, 10 minutes,
//   this client's), redirect_uri, and the PKCE code_verifier against the S256 code_challenge; errors
//   come as GitHub sends them, HTTP 200 with an `error` field. JSON only with Accept: application/json.
// - GET /api/v3/user and /api/v3/user/emails with `Authorization: Bearer` (or `token`); like GitHub,
//   a request without a User-Agent is refused (403).
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { freePort } from './process.ts';

export interface GithubEmail {
  email: string;
  primary: boolean;
  verified: boolean;
}

export interface GithubAccount {
  id: number;
  login: string;
  name: string | null;
  emails: GithubEmail[];
}

export interface GithubApp {
  client_id: string;
  client_secret: string;
  /** The app's "Authorization callback URL". */
  redirect_uri: string;
}

export interface GithubTokenRequest {
  params: Record<string, string>;
  accept: string | undefined;
  /** Why the stand-in refused it (undefined: a token was issued). */
  refused: string | undefined;
}

export interface GithubStandin {
  /** The web base (OAUTH_GITHUB_URL). */
  readonly url: string;
  /** The API base (OAUTH_GITHUB_API_URL). */
  readonly apiUrl: string;
  readonly authorizeRequests: Record<string, string>[];
  readonly tokenRequests: GithubTokenRequest[];
  readonly apiRequests: { path: string; authorization: string | undefined; userAgent: string | undefined }[];
  /** Every access token handed out. */
  readonly issued: string[];
  addApp(app: GithubApp): void;
  /** The account signed in at "GitHub", which the next authorization is for. */
  signIn(account: GithubAccount): void;
  /** Drives the authorize page over HTTP (Authorize, or Cancel); returns where GitHub redirects. */
  authorize(url: string, options?: { cancel?: boolean }): Promise<string>;
  close(): Promise<void>;
}

interface PendingCode {
  clientId: string;
  redirectUri: string;
  challenge: string | undefined;
  method: string | undefined;
  account: GithubAccount;
  expires: number;
  scope: string;
}

const html = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startGithubStandin(port?: number): Promise<GithubStandin> {
  const listenPort = port ?? (await freePort());
  const url = `http://127.0.0.2:${listenPort}`;
  const apiUrl = `${url}/api/v3`;
  const apps = new Map<string, GithubApp>();
  const codes = new Map<string, PendingCode>();
  const tokens = new Map<string, GithubAccount>();
  let signedIn: GithubAccount | undefined;
  const authorizeRequests: Record<string, string>[] = [];
  const tokenRequests: GithubTokenRequest[] = [];
  const apiRequests: GithubStandin['apiRequests'] = [];
  const issued: string[] = [];

  const send = (res: ServerResponse, status: number, type: string, body: string, headers = {}) => {
    res.writeHead(status, { 'content-type': type, ...headers });
    res.end(body);
  };
  const json = (res: ServerResponse, status: number, body: unknown) =>
    send(res, status, 'application/json; charset=utf-8', JSON.stringify(body));

  /** Validates an authorization request; the app, or an error page's text (no redirect, as GitHub). */
  function checkAuthorize(params: Record<string, string>): GithubApp | string {
    const app = apps.get(params.client_id ?? '');
    if (!app) return 'Unknown client_id.';
    if (params.redirect_uri !== undefined && params.redirect_uri !== app.redirect_uri)
      return 'The redirect_uri is not associated with this application.';
    if (params.code_challenge_method !== undefined && params.code_challenge_method !== 'S256')
      return 'Only S256 code challenges are supported.';
    return app;
  }

  function authorizePage(res: ServerResponse, params: Record<string, string>, app: GithubApp) {
    const hidden = Object.entries(params)
      .map(([k, v]) => `<input type="hidden" name="${html(k)}" value="${html(v)}">`)
      .join('');
    send(
      res,
      200,
      'text/html; charset=utf-8',
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Authorize application</title></head>
<body><main><h1>Authorize ${html(app.client_id)}</h1><p>Signed in as ${html(signedIn?.login ?? '')}</p>
<form method="post" action="/login/oauth/authorize">${hidden}<input type="hidden" name="decision" value="allow"><button type="submit">Authorize</button></form>
<form method="post" action="/login/oauth/authorize">${hidden}<input type="hidden" name="decision" value="deny"><button type="submit">Cancel</button></form>
</main></body></html>`,
    );
  }

  function decide(res: ServerResponse, params: Record<string, string>) {
    const { decision, ...request } = params;
    const app = checkAuthorize(request);
    if (typeof app === 'string' || !signedIn) {
      send(res, 400, 'text/plain', typeof app === 'string' ? app : 'Nobody is signed in.');
      return;
    }
    const back = new URL(request.redirect_uri ?? app.redirect_uri);
    if (decision === 'allow') {
      const code = randomBytes(10).toString('hex');
      codes.set(code, {
        clientId: app.client_id,
        redirectUri: back.href,
        challenge: request.code_challenge,
        method: request.code_challenge_method,
        account: signedIn,
        expires: Date.now() + 600_000,
        scope: request.scope ?? '',
      });
      back.searchParams.set('code', code);
    } else {
      back.searchParams.set('error', 'access_denied');
      back.searchParams.set('error_description', 'The user has denied your application access.');
      back.searchParams.set(
        'error_uri',
        'https://docs.github.com/apps/managing-oauth-apps/troubleshooting-authorization-request-errors/#access-denied',
      );
    }
    if (request.state !== undefined) back.searchParams.set('state', request.state);
    res.writeHead(302, { location: back.href });
    res.end();
  }

  /** POST /login/oauth/access_token: the token, or GitHub's error (HTTP 200 with `error`). */
  function exchange(req: IncomingMessage, res: ServerResponse, body: string) {
    const type = req.headers['content-type'] ?? '';
    const params: Record<string, string> = type.includes('application/json')
      ? (JSON.parse(body || '{}') as Record<string, string>)
      : Object.fromEntries(new URLSearchParams(body));
    const basic = /^Basic (.+)$/i.exec(req.headers.authorization ?? '');
    if (basic) {
      const [id, secret] = Buffer.from(basic[1]!, 'base64').toString().split(':');
      params.client_id ??= decodeURIComponent(id ?? '');
      params.client_secret ??= decodeURIComponent(secret ?? '');
    }
    const accept = req.headers.accept;
    const record: GithubTokenRequest = { params, accept, refused: undefined };
    tokenRequests.push(record);
    const answer = (fields: Record<string, string>) => {
      if ((accept ?? '').includes('application/json')) json(res, 200, fields);
      else
        send(
          res,
          200,
          'application/x-www-form-urlencoded; charset=utf-8',
          new URLSearchParams(fields).toString(),
        );
    };
    const refuse = (error: string, description: string) => {
      record.refused = error;
      answer({ error, error_description: description, error_uri: 'https://docs.github.com/apps' });
    };
    const app = apps.get(params.client_id ?? '');
    if (!app || params.client_secret !== app.client_secret)
      return refuse(
        'incorrect_client_credentials',
        'The client_id and/or client_secret passed are incorrect.',
      );
    const pending = codes.get(params.code ?? '');
    codes.delete(params.code ?? '');
    if (!pending || pending.expires < Date.now() || pending.clientId !== app.client_id)
      return refuse('bad_verification_code', 'The code passed is incorrect or expired.');
    if (params.redirect_uri !== undefined && params.redirect_uri !== pending.redirectUri)
      return refuse(
        'redirect_uri_mismatch',
        'The redirect_uri MUST match the registered callback URL for this application.',
      );
    if (pending.challenge !== undefined) {
      const verifier = params.code_verifier ?? '';
      const computed = createHash('sha256').update(verifier).digest('base64url');
      if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier) || computed !== pending.challenge)
        return refuse('bad_verification_code', 'The code_verifier does not match the code_challenge.');
    }
    const token = `gho_${randomBytes(18).toString('base64url')}`;
    tokens.set(token, pending.account);
    issued.push(token);
    answer({ access_token: token, token_type: 'bearer', scope: pending.scope.replaceAll(' ', ',') });
  }

  function api(req: IncomingMessage, res: ServerResponse, path: string) {
    const authorization = req.headers.authorization;
    const userAgent = req.headers['user-agent'];
    apiRequests.push({ path, authorization, userAgent });
    if (!userAgent)
      return send(
        res,
        403,
        'text/plain',
        'Request forbidden by administrative rules. Please make sure your request has a User-Agent header.',
      );
    const token = /^(?:Bearer|token) (.+)$/i.exec(authorization ?? '')?.[1];
    const account = token === undefined ? undefined : tokens.get(token);
    if (!account)
      return json(res, 401, {
        message: 'Bad credentials',
        documentation_url: 'https://docs.github.com/rest',
      });
    if (path === '/user') {
      const publicEmail = account.emails.find((e) => e.primary)?.email ?? null;
      return json(res, 200, {
        login: account.login,
        id: account.id,
        node_id: `U_${account.id}`,
        type: 'User',
        name: account.name,
        email: publicEmail,
        html_url: `${url}/${account.login}`,
      });
    }
    if (path === '/user/emails')
      return json(
        res,
        200,
        account.emails.map((e) => ({ ...e, visibility: e.primary ? 'private' : null })),
      );
    return json(res, 404, { message: 'Not Found' });
  }

  const server: Server = createServer((req, res) => {
    void (async () => {
      try {
        const target = new URL(req.url ?? '/', url);
        const path = target.pathname;
        if (req.method === 'GET' && path === '/login/oauth/authorize') {
          const params = Object.fromEntries(target.searchParams);
          authorizeRequests.push(params);
          const app = checkAuthorize(params);
          if (typeof app === 'string') return send(res, 400, 'text/plain', app);
          return authorizePage(res, params, app);
        }
        if (req.method === 'POST' && path === '/login/oauth/authorize')
          return decide(res, Object.fromEntries(new URLSearchParams(await readBody(req))));
        if (req.method === 'POST' && path === '/login/oauth/access_token')
          return exchange(req, res, await readBody(req));
        if (req.method === 'GET' && path.startsWith('/api/v3/'))
          return api(req, res, path.slice('/api/v3'.length));
        return json(res, 404, { message: 'Not Found' });
      } catch (error) {
        if (!res.headersSent) send(res, 500, 'text/plain', String(error));
        else res.end();
      }
    })();
  });
  server.listen(listenPort, '127.0.0.2');
  await once(server, 'listening');

  return {
    url,
    apiUrl,
    authorizeRequests,
    tokenRequests,
    apiRequests,
    issued,
    addApp(app) {
      apps.set(app.client_id, app);
    },
    signIn(account) {
      signedIn = account;
    },
    async authorize(authorizeUrl, options = {}) {
      const page = await fetch(authorizeUrl, { redirect: 'manual' });
      const text = await page.text();
      if (page.status !== 200) throw new Error(`GitHub stand-in answered ${page.status}: ${text}`);
      const forms = [...text.matchAll(/<form method="post" action="([^"]+)">([\s\S]*?)<\/form>/g)];
      const form = forms.find((f) => f[2]!.includes(options.cancel ? '>Cancel<' : '>Authorize<'));
      if (!form) throw new Error(`no form on the authorize page: ${text}`);
      const fields = new URLSearchParams();
      for (const input of form[2]!.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)">/g))
        fields.append(decodeHtml(input[1]!), decodeHtml(input[2]!));
      const res = await fetch(new URL(form[1]!, url), {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: fields.toString(),
      });
      const location = res.headers.get('location');
      if (res.status !== 302 || !location)
        throw new Error(`GitHub stand-in answered ${res.status}: ${await res.text()}`);
      return location;
    },
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close').catch(() => {});
    },
  };
}

function decodeHtml(text: string): string {
  return text.replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)));
}
