// The apps that sign in through Usher: registered by the operator (`usher clients …`), their
// secrets shown once and kept sealed under ENCRYPTION_KEY (oidc-provider compares the secret a
// client sends with the one it is given, so a one-way hash cannot serve), opened when the
// provider looks a client up and kept open for a while (CLIENT_CACHE_MS).
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { InTransaction } from '../db/transactions.ts';
import type { Journal } from '../kernel/journal.ts';
import { SecretBox } from '../kernel/sealing.ts';
import { AppError } from '../shared/errors.ts';
import { randomTextId } from '../shared/ids.ts';
import type { OidcClientsRepository, StoredClient } from './client-repository.ts';
import { REFRESH_INTERVAL_MS } from './keys.ts';

/**
 * How long a client read from the database is answered from memory: the bound within which a
 * change made by another process (`usher clients …`, another instance) takes effect here, the
 * same as for the signing keys (keys.ts). Reading the client and opening its secret on every
 * token was about a third of a token's CPU (docs/benchmarks.md, round 19). A request presenting
 * a secret other than the one held reads the client again, so a rotated secret works at once;
 * the old one, and a removed client, stop within the bound (docs/decisions.md).
 */
export const CLIENT_CACHE_MS = REFRESH_INTERVAL_MS;
/** Past this many held clients, the ones past their time are dropped when another is added. */
const CACHE_SWEEP_SIZE = 1000;

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

/** What a request presents for a client, when it does (oidc/adapter.ts reads it): its id and secret. */
export interface PresentedCredentials {
  clientId: string;
  secret: string;
}

export class ClientRegistry {
  readonly #clients: OidcClientsRepository;
  readonly #transaction: ClientTransaction;
  readonly #key: () => Buffer | undefined;
  readonly #now: () => number;
  /** Clients as last read, with when (the clock's time): see CLIENT_CACHE_MS. */
  readonly #held = new Map<string, { metadata: ClientMetadata; readAt: number }>();

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
    this.#held.delete(clientId);
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
    this.#held.delete(clientId);
    return { clientId, clientSecret: secret };
  }

  /**
   * The provider's view of a client; undefined for an unknown id. Answered from what was read less
   * than CLIENT_CACHE_MS ago, unless `presented` (the credentials of the request being answered)
   * names this client with a secret other than the one held: the client is then read again.
   */
  async metadata(clientId: string, presented?: PresentedCredentials): Promise<ClientMetadata | undefined> {
    const now = this.#now();
    const held = this.#held.get(clientId);
    if (
      held &&
      now >= held.readAt &&
      now - held.readAt < CLIENT_CACHE_MS &&
      (presented?.clientId !== clientId || sameSecret(held.metadata.client_secret, presented.secret))
    )
      return held.metadata;
    const metadata = await this.#read(clientId);
    if (!metadata) {
      this.#held.delete(clientId);
      return undefined;
    }
    if (this.#held.size >= CACHE_SWEEP_SIZE) {
      for (const [id, entry] of this.#held)
        if (now < entry.readAt || now - entry.readAt >= CLIENT_CACHE_MS) this.#held.delete(id);
    }
    this.#held.set(clientId, { metadata, readAt: now });
    return metadata;
  }

  async #read(clientId: string): Promise<ClientMetadata | undefined> {
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

/** Whether a presented secret is the one held. */
function sameSecret(held: string | undefined, presented: string): boolean {
  if (held === undefined) return false;
  const a = Buffer.from(held);
  const b = Buffer.from(presented);
  return a.length === b.length && timingSafeEqual(a, b);
}

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
