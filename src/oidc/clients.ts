// The apps that sign in through Usher: registered by the operator (`usher clients …`), their
// secrets shown once and kept sealed under ENCRYPTION_KEY (oidc-provider compares the secret a
// client sends with the one it is given, so a one-way hash cannot serve), opened only when the
// provider looks a client up.
import { randomBytes } from 'node:crypto';
import type { InTransaction } from '../db/transactions.ts';
import type { Journal } from '../kernel/journal.ts';
import { SecretBox } from '../kernel/sealing.ts';
import { AppError } from '../shared/errors.ts';
import { randomTextId } from '../shared/ids.ts';
import type { OidcClientsRepository, StoredClient } from './client-repository.ts';

export interface NewClient {
  name: string;
  redirectUris: string[];
  postLogoutRedirectUris: string[];
  public: boolean;
  firstParty: boolean;
  /** Grants beyond the authorization code and refresh ones: `client_credentials`. */
  grants: string[];
}

/** What the provider is given for a client (oidc-provider's client metadata). */
export interface ClientMetadata {
  client_id: string;
  client_secret?: string;
  client_name: string;
  redirect_uris: string[];
  post_logout_redirect_uris: string[];
  grant_types: string[];
  response_types: string[];
  token_endpoint_auth_method: 'client_secret_basic' | 'none';
  application_type: 'web' | 'native';
  usher_first_party: boolean;
}

export interface ClientView {
  clientId: string;
  name: string;
  public: boolean;
  firstParty: boolean;
  redirectUris: string[];
  postLogoutRedirectUris: string[];
  grantTypes: string[];
  createdAt: Date;
}

const NAME_MAX = 100;
/** A native app's private-use scheme: a reverse domain name (RFC 8252 §7.1), `com.example.app:`. */
const PRIVATE_USE_SCHEME = /^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]+:$/;
const URI_MAX = 2048;
const EXTRA_GRANTS = new Set(['client_credentials']);

/**
 * A redirect URI as OAuth 2.0 Security BCP (RFC 9700 §2.1) wants it: absolute, compared exactly
 * (but the port of a native app's loopback URI), no fragment; https, or http only to a loopback
 * address, or a private-use scheme of a native app (`com.example.app:/callback`, RFC 8252 §7.1).
 */
export function checkRedirectUri(raw: string, option: string): string {
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    // the error below
  }
  const loopback = url && ['127.0.0.1', '[::1]', 'localhost'].includes(url.hostname);
  const ok =
    url !== undefined &&
    raw.length <= URI_MAX &&
    !/\s/.test(raw) &&
    !raw.includes('#') &&
    url.username === '' &&
    url.password === '' &&
    (url.protocol === 'https:' ||
      (url.protocol === 'http:' && loopback) ||
      (PRIVATE_USE_SCHEME.test(url.protocol) && !url.host));
  if (!ok) {
    throw new AppError(
      'VALIDATION_FAILED',
      `${option} "${raw}" is not accepted: an absolute https URI without a fragment, http only to 127.0.0.1, [::1] or localhost, or a native app's reverse-domain scheme (com.example.app:/callback).`,
    );
  }
  return raw;
}

/** A client change and its audit record commit together. */
export type ClientTransaction = InTransaction<{ clients: OidcClientsRepository; journal: Journal }>;

export class ClientRegistry {
  readonly #clients: OidcClientsRepository;
  readonly #transaction: ClientTransaction;
  readonly #key: () => Buffer | undefined;
  readonly #now: () => number;

  constructor(deps: {
    clients: OidcClientsRepository;
    transaction: ClientTransaction;
    key: () => Buffer | undefined;
    now: () => number;
  }) {
    this.#clients = deps.clients;
    this.#transaction = deps.transaction;
    this.#key = deps.key;
    this.#now = deps.now;
  }

  #box(): SecretBox {
    const key = this.#key();
    if (!key) {
      throw new AppError(
        'UNAVAILABLE',
        'Client secrets are sealed under ENCRYPTION_KEY, which is not set (on PostgreSQL it must be).',
      );
    }
    return new SecretBox(key);
  }

  /** `usher clients add`: the client id, and the secret this once (none for a public client). */
  async add(input: NewClient): Promise<{ clientId: string; clientSecret?: string }> {
    const name = input.name.trim();
    if (name === '' || name.length > NAME_MAX || /\p{Cc}/u.test(name))
      throw new AppError(
        'VALIDATION_FAILED',
        `--name must be 1 to ${NAME_MAX} characters, no control characters.`,
      );
    const redirectUris = [
      ...new Set(input.redirectUris.map((uri) => checkRedirectUri(uri, '--redirect-uri'))),
    ];
    const postLogout = [
      ...new Set(
        input.postLogoutRedirectUris.map((uri) => checkRedirectUri(uri, '--post-logout-redirect-uri')),
      ),
    ];
    for (const grant of input.grants) {
      if (!EXTRA_GRANTS.has(grant))
        throw new AppError(
          'VALIDATION_FAILED',
          `--grant "${grant}" is not accepted; expected client_credentials.`,
        );
    }
    const credentials = input.grants.includes('client_credentials');
    if (credentials && input.public)
      throw new AppError(
        'VALIDATION_FAILED',
        'A public client has no secret, so it cannot use client_credentials.',
      );
    if (redirectUris.length === 0 && !credentials)
      throw new AppError('VALIDATION_FAILED', '--redirect-uri is required (at least one).');
    const grantTypes = [
      ...(redirectUris.length > 0 ? ['authorization_code', 'refresh_token'] : []),
      ...(credentials ? ['client_credentials'] : []),
    ];
    const clientId = randomTextId(16);
    const secret = input.public ? undefined : randomBytes(32).toString('base64url');
    const secretSealed = secret === undefined ? null : this.#box().seal(secret, context(clientId));
    await this.#transaction(async ({ clients, journal }) => {
      await clients.insert({
        clientId,
        name,
        secretSealed,
        redirectUris,
        postLogoutRedirectUris: postLogout,
        grantTypes,
        firstParty: input.firstParty,
        createdAt: new Date(this.#now()),
      });
      await journal.record({
        type: 'oidc.client.added',
        userId: null,
        details: {
          clientId,
          name,
          redirectUris,
          grantTypes,
          public: input.public,
          firstParty: input.firstParty,
        },
      });
    });
    return secret === undefined ? { clientId } : { clientId, clientSecret: secret };
  }

  async list(): Promise<ClientView[]> {
    return (await this.#clients.list()).map(view);
  }

  async remove(clientId: string): Promise<void> {
    const removed = await this.#transaction(async ({ clients, journal }) => {
      if (!(await clients.remove(clientId))) return false;
      await journal.record({ type: 'oidc.client.removed', userId: null, details: { clientId } });
      return true;
    });
    if (!removed) throw new AppError('NOT_FOUND', `No client has the id ${clientId}.`);
  }

  /** `usher clients rotate-secret`: a new secret, shown once; the old one stops working at once. */
  async rotateSecret(clientId: string): Promise<{ clientId: string; clientSecret: string }> {
    const client = await this.#clients.find(clientId);
    if (!client) throw new AppError('NOT_FOUND', `No client has the id ${clientId}.`);
    if (client.secretSealed === null)
      throw new AppError('VALIDATION_FAILED', `The client ${clientId} is public: it has no secret.`);
    const secret = randomBytes(32).toString('base64url');
    const sealed = this.#box().seal(secret, context(clientId));
    await this.#transaction(async ({ clients, journal }) => {
      await clients.setSecret(clientId, sealed);
      await journal.record({ type: 'oidc.client.secret_rotated', userId: null, details: { clientId } });
    });
    return { clientId, clientSecret: secret };
  }

  /** The provider's view of a client; undefined for an unknown id, or a secret that cannot be opened. */
  async metadata(clientId: string): Promise<ClientMetadata | undefined> {
    const client = await this.#clients.find(clientId);
    if (!client) return undefined;
    const secret =
      client.secretSealed === null ? undefined : this.#box().open(client.secretSealed, context(clientId));
    return {
      client_id: client.clientId,
      ...(secret === undefined ? {} : { client_secret: secret }),
      client_name: client.name,
      redirect_uris: client.redirectUris,
      post_logout_redirect_uris: client.postLogoutRedirectUris,
      grant_types: client.grantTypes,
      response_types: client.grantTypes.includes('authorization_code') ? ['code'] : [],
      token_endpoint_auth_method: secret === undefined ? 'none' : 'client_secret_basic',
      application_type: nativeApp(client) ? 'native' : 'web',
      usher_first_party: client.firstParty,
    };
  }
}

const context = (clientId: string) => `oidc-client:${clientId}`;

const isLoopbackHttp = (url: URL) =>
  url.protocol === 'http:' && ['127.0.0.1', '[::1]', 'localhost'].includes(url.hostname);

/**
 * A native app (RFC 8252), as oidc-provider must be told: one that comes back on a private-use
 * scheme, or a public client that comes back only to the loopback interface (a desktop app, which
 * may listen on any port: RFC 8252 §7.3, which the library applies to native clients). A native
 * client is always shown the consent step by the library (another app may claim its scheme);
 * Usher's page passes it at once for first-party apps and agreed scopes.
 */
function nativeApp(client: StoredClient): boolean {
  const uris = client.redirectUris.map((uri) => new URL(uri));
  if (uris.some((url) => PRIVATE_USE_SCHEME.test(url.protocol))) return true;
  return client.secretSealed === null && uris.length > 0 && uris.every(isLoopbackHttp);
}

function view(client: StoredClient): ClientView {
  return {
    clientId: client.clientId,
    name: client.name,
    public: client.secretSealed === null,
    firstParty: client.firstParty,
    redirectUris: client.redirectUris,
    postLogoutRedirectUris: client.postLogoutRedirectUris,
    grantTypes: client.grantTypes,
    createdAt: client.createdAt,
  };
}
