// A running app holds the clients it read for CLIENT_CACHE_MS (decision 418), the bound within which
// it picks up a changed key set too: a client removed, or its secret rotated, by another process on
// the same database (`usher clients …`, another instance) stops working within that bound. A
// rotated secret works at once. The change is made through the service the CLI runs, on a
// database handle of its own; the app's clock is moved instead of waiting.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { openDatabase } from '../../src/db/database.ts';
import { type Built, compose } from '../../src/features.ts';
import { CLIENT_CACHE_MS } from '../../src/oidc/clients.ts';
import { describeUnless } from '../helpers/skip.ts';
import { describeEachStore, freshDatabaseUrl, postgresAvailable, type Store } from '../helpers/stores.ts';
import { API, type OidcTestApp, startOidcApp } from '../helpers/usher-oidc.ts';

/** A client_credentials token request: the status (and error) say whether the secret works. */
async function credentialsGrant(
  t: OidcTestApp,
  clientId: string,
  secret: string,
): Promise<{ status: number; error?: string }> {
  const response = await fetch(`${t.issuer}/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}`,
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', resource: API }).toString(),
  });
  const body = (await response.json()) as { error?: string };
  return { status: response.status, ...(body.error ? { error: body.error } : {}) };
}

const REFUSED = { status: 401, error: 'invalid_client' };

/** The client service another process runs on the app's database (the CLI's). */
async function elsewhere<T>(t: OidcTestApp, use: (clients: Built['oidc']['clients']) => Promise<T>) {
  const database = openDatabase(t.config.databaseUrl, t.config.database);
  try {
    return await use(compose(t.config, database).oidc.clients);
  } finally {
    await database.close();
  }
}

const worker = (clients: Built['oidc']['clients']) =>
  clients.add({
    name: 'Worker',
    redirectUris: [],
    postLogoutRedirectUris: [],
    public: false,
    firstParty: false,
    grants: ['client_credentials'],
  }) as Promise<{ clientId: string; clientSecret: string }>;

describeEachStore('OpenID Connect clients changed by another process', (store) => {
  let ahead = 0;
  const clock = () => Date.now() + ahead;
  let t: OidcTestApp;
  before(async () => {
    t = await startOidcApp(store, 'a', {}, { clock });
  });
  after(() => t.close());

  test('ISSUE 48: a client removed elsewhere stops working here within CLIENT_CACHE_MS', async () => {
    const created = await elsewhere(t, worker);
    assert.deepEqual(await credentialsGrant(t, created.clientId, created.clientSecret), { status: 200 });
    await elsewhere(t, (clients) => clients.remove(created.clientId));
    ahead += CLIENT_CACHE_MS;
    assert.deepEqual(await credentialsGrant(t, created.clientId, created.clientSecret), REFUSED);
  });

  test('ISSUE 48: a secret rotated elsewhere works here at once; the old one stops within CLIENT_CACHE_MS', async () => {
    const first = await elsewhere(t, worker);
    const second = await elsewhere(t, worker);
    for (const client of [first, second])
      assert.deepEqual(await credentialsGrant(t, client.clientId, client.clientSecret), { status: 200 });
    const [firstRotated, secondRotated] = await elsewhere(t, async (clients) => [
      await clients.rotateSecret(first.clientId),
      await clients.rotateSecret(second.clientId),
    ]);
    // The app holds the old secret of both: the new one is read at once all the same.
    assert.deepEqual(await credentialsGrant(t, first.clientId, firstRotated!.clientSecret), { status: 200 });
    assert.deepEqual(await credentialsGrant(t, first.clientId, first.clientSecret), REFUSED);
    ahead += CLIENT_CACHE_MS;
    assert.deepEqual(await credentialsGrant(t, second.clientId, second.clientSecret), REFUSED);
    assert.deepEqual(await credentialsGrant(t, second.clientId, secondRotated!.clientSecret), {
      status: 200,
    });
  });

  test('ISSUE 48: a wrong secret never gets a token, from a client held or read again', async () => {
    const created = await elsewhere(t, worker);
    assert.deepEqual(await credentialsGrant(t, created.clientId, created.clientSecret), { status: 200 });
    assert.deepEqual(await credentialsGrant(t, created.clientId, `${created.clientSecret}x`), REFUSED);
    assert.deepEqual(await credentialsGrant(t, created.clientId, 'short'), REFUSED);
    assert.deepEqual(await credentialsGrant(t, created.clientId, created.clientSecret), { status: 200 });
  });
});

describeUnless(
  postgresAvailable ? false : 'TEST_DATABASE_URL is not set',
  'OpenID Connect clients on two instances of one database [postgres]',
  () => {
    let ahead = 0;
    const clock = () => Date.now() + ahead;
    let own: Store & { drop(): Promise<void> };
    let one: OidcTestApp;
    let two: OidcTestApp;
    before(async () => {
      const fresh = await freshDatabaseUrl('postgres');
      own = { kind: 'postgres', url: fresh.url, drop: fresh.drop };
      one = await startOidcApp(own, 'a', {}, { clock });
      two = await startOidcApp(own, 'a', {}, { clock, publicUrl: one.base });
    });
    after(async () => {
      await one?.close();
      await two?.close();
      await own?.drop();
    });

    test('ISSUE 48: a client removed while both instances hold it stops working on both within CLIENT_CACHE_MS', async () => {
      const created = await elsewhere(one, worker);
      for (const t of [one, two])
        assert.deepEqual(await credentialsGrant(t, created.clientId, created.clientSecret), { status: 200 });
      await elsewhere(two, (clients) => clients.remove(created.clientId));
      ahead += CLIENT_CACHE_MS;
      for (const t of [one, two])
        assert.deepEqual(await credentialsGrant(t, created.clientId, created.clientSecret), REFUSED);
    });
  },
);
