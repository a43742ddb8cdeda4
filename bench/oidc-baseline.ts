// The token endpoint's yardstick (issue 48): oidc-provider alone, as a user choosing between Usher
// and the library under it would run it. The same installed version, configured for the same
// features as src/oidc/provider.ts (PKCE, resource indicators with ES256 JWT access tokens, RS256
// ID tokens, client credentials, refresh token rotation, introspection, revocation, userinfo,
// RP-initiated logout, the same claims and lifetimes), its own in-memory adapter, one static
// confidential client like the one `usher clients add` makes, and a bare node:http server. No
// framework, no database, no logging. Its sign-in is an interaction that finishes at once as
// account 1 (the bench measures tokens, not pages). The adapter is the library's own in-memory
// one, given a store as large as a bench needs: its default holds 1,000 entries, fewer than the
// codes minted for one measurement.
// PORT=<port> CLIENT_ID=… CLIENT_SECRET=… RESOURCE=<API> REDIRECT_URI=… node bench/oidc-baseline.ts
// (bench/oidc-common.ts starts it); prints `ready` on stdout once listening.
import { generateKeyPairSync } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import Provider, { type Configuration, errors, type KoaContextWithOIDC } from 'oidc-provider';
import MemoryAdapter from 'oidc-provider/lib/adapters/memory_adapter.js';
import LRU from 'oidc-provider/lib/helpers/lru.js';

const CLIENT_ID = process.env.CLIENT_ID ?? '';
const CLIENT_SECRET = process.env.CLIENT_SECRET ?? '';
const RESOURCE = process.env.RESOURCE ?? '';
const REDIRECT_URI = process.env.REDIRECT_URI ?? '';
const port = Number(process.env.PORT ?? 0);
const issuer = `http://127.0.0.1:${port}`;
const ACCESS_TOKEN_TTL = 300;

const jwk = (privateKey: ReturnType<typeof generateKeyPairSync>['privateKey'], alg: string, kid: string) => ({
  ...privateKey.export({ format: 'jwk' }),
  alg,
  kid,
  use: 'sig',
});

/** What an authorization asks for, as src/oidc/provider.ts's `requested` reckons it. */
function requested(ctx: KoaContextWithOIDC) {
  const { oidc } = ctx;
  const scopes = [...oidc.requestParamOIDCScopes];
  const resources = Object.entries(oidc.resourceServers ?? {})
    .map(
      ([resource, server]) =>
        [resource, [...oidc.requestParamScopes].filter((scope) => server.scopes.has(scope))] as const,
    )
    .filter(([, granted]) => granted.length > 0);
  return { scopes, resources };
}

const store = new LRU({ maxSize: 10_000_000 });

const configuration: Configuration = {
  adapter: (model: string) => new MemoryAdapter(model, store),
  clients: [
    {
      client_id: CLIENT_ID,
      client_secret: CLIENT_SECRET,
      client_name: 'Bench service',
      redirect_uris: [REDIRECT_URI],
      post_logout_redirect_uris: [],
      grant_types: ['authorization_code', 'refresh_token', 'client_credentials'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
      application_type: 'web',
    },
  ],
  jwks: {
    keys: [
      jwk(generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey, 'RS256', 'rs'),
      jwk(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey, 'ES256', 'es'),
    ] as NonNullable<Configuration['jwks']>['keys'],
  },
  cookies: {
    keys: ['bench-cookie-key-0123456789abcdef'],
    long: { signed: true, httpOnly: true, sameSite: 'lax' },
    short: { signed: true, httpOnly: true, sameSite: 'lax' },
  },
  findAccount: async (_ctx, sub) => ({
    accountId: sub,
    claims: () => ({
      sub,
      name: 'Bench',
      email: 'bench@example.com',
      email_verified: false,
      roles: [],
    }),
  }),
  // As Usher's first-party clients: the grant is extended without a consent page.
  loadExistingGrant: async (ctx) => {
    const { oidc } = ctx;
    const client = oidc.client!;
    const grantId = oidc.result?.consent?.grantId || oidc.session!.grantIdFor(client.clientId);
    const existing = grantId ? await oidc.provider.Grant.find(grantId) : undefined;
    const accountId = oidc.session!.accountId;
    if (!accountId || (existing && existing.accountId !== accountId)) return existing;
    const asked = requested(ctx);
    const grant = existing ?? new oidc.provider.Grant({ accountId, clientId: client.clientId });
    if (asked.scopes.length > 0) grant.addOIDCScope(asked.scopes.join(' '));
    for (const [resource, scopes] of asked.resources) grant.addResourceScope(resource, scopes.join(' '));
    await grant.save();
    return grant;
  },
  extraTokenClaims: async (_ctx, token) =>
    'accountId' in token && typeof token.accountId === 'string' ? { roles: [] } : undefined,
  claims: {
    acr: null,
    amr: null,
    auth_time: null,
    iss: null,
    sid: null,
    openid: ['sub', 'amr', 'roles'],
    profile: ['name'],
    email: ['email', 'email_verified'],
  },
  scopes: ['openid', 'profile', 'email', 'offline_access'],
  responseTypes: ['code'],
  pkce: { required: () => true },
  allowOmittingSingleRegisteredRedirectUri: false,
  clientDefaults: {
    grant_types: ['authorization_code', 'refresh_token'],
    id_token_signed_response_alg: 'RS256',
    require_auth_time: true,
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  },
  clientAuthMethods: ['client_secret_basic', 'client_secret_post', 'none'],
  enabledJWA: {
    idTokenSigningAlgValues: ['RS256', 'ES256'],
    userinfoSigningAlgValues: ['RS256', 'ES256'],
    introspectionSigningAlgValues: ['RS256', 'ES256'],
    authorizationSigningAlgValues: ['RS256', 'ES256'],
  },
  features: {
    devInteractions: { enabled: false },
    revocation: {
      enabled: true,
      allowedPolicy: async (_ctx, client, token) => token.clientId === client.clientId,
    },
    introspection: {
      enabled: true,
      allowedPolicy: async (ctx, client, token) =>
        client.clientAuthMethod !== 'none' || token.clientId === ctx.oidc.client?.clientId,
    },
    clientCredentials: { enabled: true },
    userinfo: { enabled: true },
    rpInitiatedLogout: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async (_ctx, _client, oneOf) => (oneOf && oneOf.length === 1 ? oneOf[0]! : undefined!),
      useGrantedResource: async () => true,
      getResourceServerInfo: async (_ctx, indicator) => {
        if (indicator !== RESOURCE) throw new errors.InvalidTarget();
        return {
          scope: 'openid profile email',
          audience: indicator,
          accessTokenTTL: ACCESS_TOKEN_TTL,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'ES256' } },
        };
      },
    },
  },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  ttl: {
    AccessToken: ACCESS_TOKEN_TTL,
    ClientCredentials: ACCESS_TOKEN_TTL,
    AuthorizationCode: 60,
    IdToken: 3600,
    Interaction: 10 * 60,
    Grant: 30 * 24 * 3600,
    Session: 14 * 24 * 3600,
    RefreshToken: 30 * 24 * 3600,
  },
  rotateRefreshToken: true,
  clientBasedCORS: () => false,
};

const provider = new Provider(issuer, configuration);
const callback = provider.callback() as (req: IncomingMessage, res: ServerResponse) => void;

/** The sign-in and consent pages, answered at once: account 1 signs in and agrees to everything asked. */
async function interaction(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const details = await provider.interactionDetails(req, res);
  const result: Record<string, unknown> = {};
  if (details.prompt.name === 'login') result.login = { accountId: '1' };
  else {
    const grant = details.grantId
      ? (await provider.Grant.find(details.grantId))!
      : new provider.Grant({
          accountId: details.session!.accountId,
          clientId: String(details.params.client_id),
        });
    grant.addOIDCScope(String(details.params.scope));
    if (details.params.resource)
      grant.addResourceScope(String(details.params.resource), String(details.params.scope));
    result.consent = { grantId: await grant.save() };
  }
  await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
}

createServer((req, res) => {
  if (req.url?.startsWith('/interaction/')) {
    interaction(req, res).catch((error: unknown) => {
      res.statusCode = 500;
      res.end(String(error));
    });
    return;
  }
  callback(req, res);
}).listen(port, '127.0.0.1', () => {
  process.stdout.write('ready\n');
});

// Exits through Node's own exit path, so that a profile asked for with --cpu-prof is written.
process.on('SIGTERM', () => process.exit(0));
