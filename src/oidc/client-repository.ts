import type { Kysely, Selectable } from 'kysely';
import type { Tables } from '../db/schema.ts';
import type { OidcClientsTable } from './tables.ts';

/** A registered client as stored: its secret still sealed. */
export interface StoredClient {
  clientId: string;
  name: string;
  secretSealed: string | null;
  redirectUris: string[];
  postLogoutRedirectUris: string[];
  grantTypes: string[];
  firstParty: boolean;
  createdAt: Date;
}

const words = (text: string) => (text === '' ? [] : text.split(' '));

function toClient(row: Selectable<OidcClientsTable>): StoredClient {
  return {
    clientId: row.client_id,
    name: row.name,
    secretSealed: row.secret_sealed,
    redirectUris: words(row.redirect_uris),
    postLogoutRedirectUris: words(row.post_logout_redirect_uris),
    grantTypes: words(row.grant_types),
    firstParty: Number(row.first_party) === 1,
    createdAt: new Date(row.created_at),
  };
}

/** The apps registered to sign in through Usher (URIs hold no spaces, so lists are space-separated). */
export class OidcClientsRepository {
  readonly #db: Kysely<Tables>;
  constructor(db: Kysely<Tables>) {
    this.#db = db;
  }

  async insert(client: StoredClient): Promise<void> {
    await this.#db
      .insertInto('oidc_clients')
      .values({
        client_id: client.clientId,
        name: client.name,
        secret_sealed: client.secretSealed,
        redirect_uris: client.redirectUris.join(' '),
        post_logout_redirect_uris: client.postLogoutRedirectUris.join(' '),
        grant_types: client.grantTypes.join(' '),
        first_party: client.firstParty ? 1 : 0,
        created_at: client.createdAt.toISOString(),
      })
      .execute();
  }

  async find(clientId: string): Promise<StoredClient | undefined> {
    const row = await this.#db
      .selectFrom('oidc_clients')
      .selectAll()
      .where('client_id', '=', clientId)
      .executeTakeFirst();
    return row && toClient(row);
  }

  async list(): Promise<StoredClient[]> {
    const rows = await this.#db.selectFrom('oidc_clients').selectAll().orderBy('created_at').execute();
    return rows.map(toClient);
  }

  /** False when no client has that id. */
  async setSecret(clientId: string, secretSealed: string): Promise<boolean> {
    const result = await this.#db
      .updateTable('oidc_clients')
      .set({ secret_sealed: secretSealed })
      .where('client_id', '=', clientId)
      .where('secret_sealed', 'is not', null)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  /** The client; its consents go by cascade, and its grants and tokens are refused from then on (its lookup fails). */
  async remove(clientId: string): Promise<boolean> {
    const result = await this.#db
      .deleteFrom('oidc_clients')
      .where('client_id', '=', clientId)
      .executeTakeFirst();
    return Number(result.numDeletedRows) === 1;
  }
}

/** What people agreed third-party apps may have. */
export class OidcConsentsRepository {
  readonly #db: Kysely<Tables>;
  constructor(db: Kysely<Tables>) {
    this.#db = db;
  }

  async find(userId: bigint, clientId: string): Promise<Set<string>> {
    const row = await this.#db
      .selectFrom('oidc_consents')
      .select('scopes')
      .where('user_id', '=', userId)
      .where('client_id', '=', clientId)
      .executeTakeFirst();
    return new Set(row ? words(row.scopes) : []);
  }

  /** Adds to what was agreed: the union of every set, kept sorted. */
  async add(userId: bigint, clientId: string, scopes: Iterable<string>): Promise<void> {
    const all = [...new Set([...(await this.find(userId, clientId)), ...scopes])].sort().join(' ');
    await this.#db
      .insertInto('oidc_consents')
      .values({ user_id: userId, client_id: clientId, scopes: all })
      .onConflict((oc) => oc.columns(['user_id', 'client_id']).doUpdateSet({ scopes: all }))
      .execute();
  }
}
