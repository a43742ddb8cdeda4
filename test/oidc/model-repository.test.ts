// The adapter's storage (oidc/model-repository.ts) on both stores: rows found by the digest of their
// id only, expired rows invisible before the purge removes them, and a code or refresh token spent
// exactly once however many try at the same time.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { Database } from '../../src/db/database.ts';
import { purgeInRounds } from '../../src/db/purge.ts';
import { schemaMigrations } from '../../src/features.ts';
import { adapterFactory } from '../../src/oidc/adapter.ts';
import type { ClientRegistry } from '../../src/oidc/clients.ts';
import { OidcModelsRepository } from '../../src/oidc/model-repository.ts';
import { openTestDatabase } from '../helpers/db.ts';
import { describeEachStore } from '../helpers/stores.ts';

describeEachStore('oidc_models', (store) => {
  let database: Database;
  let models: OidcModelsRepository;
  before(async () => {
    database = openTestDatabase(store);
    await database.migrate(schemaMigrations());
    models = new OidcModelsRepository(database.db);
  });
  after(() => database.close());

  const id = () => randomBytes(32).toString('base64url');

  test('a token is found by its value, which is never stored; its jti comes back', async () => {
    const value = id();
    await models.upsert('AccessToken', value, {
      payload: { jti: value, accountId: '7', kind: 'AccessToken' },
      grantId: 'g1',
      expiresAt: Date.now() + 60_000,
    });
    assert.deepEqual(await models.find('AccessToken', value, Date.now()), {
      accountId: '7',
      kind: 'AccessToken',
      jti: value,
    });
    assert.equal(await models.find('RefreshToken', value, Date.now()), undefined, 'another model');
    const rows = await database.db.selectFrom('oidc_models').selectAll().execute();
    assert.ok(!JSON.stringify(rows, (_k, v) => (typeof v === 'bigint' ? String(v) : v)).includes(value));
  });

  test('an expired row reads as absent, and the purge removes it', async () => {
    const value = id();
    await models.upsert('AuthorizationCode', value, {
      payload: { jti: value },
      expiresAt: Date.now() + 1000,
    });
    assert.notEqual(await models.find('AuthorizationCode', value, Date.now()), undefined);
    assert.equal(await models.find('AuthorizationCode', value, Date.now() + 2000), undefined);
    const purgedAt = Date.now() + 2000;
    await purgeInRounds((limit) => models.deleteExpired(purgedAt, limit));
    // Other tests of this file (in any order) leave rows that live on; none expired may.
    const left = await database.db
      .selectFrom('oidc_models')
      .select('id_digest')
      .where('expires_ms', '<=', BigInt(purgedAt))
      .execute();
    assert.equal(left.length, 0);
  });

  test('ISSUE 40: the purge removes expired rows in bounded statements: one round of 10 removes 10, the rest in further rounds, live rows kept', async () => {
    const now = Date.now();
    // Rows of other tests of this file, in any order, may have expired too: gone first.
    await purgeInRounds((limit) => models.deleteExpired(now, limit));
    for (let i = 0; i < 25; i++)
      await models.upsert('Interaction', id(), { payload: { i }, expiresAt: now - 1000 - i });
    const live = id();
    await models.upsert('Interaction', live, { payload: { live: true }, expiresAt: now + 60_000 });
    const expired = async () =>
      Number(
        (
          await database.db
            .selectFrom('oidc_models')
            .select((eb) => eb.fn.countAll<bigint | number>().as('n'))
            .where('expires_ms', '<=', BigInt(now))
            .executeTakeFirstOrThrow()
        ).n,
      );
    assert.equal(
      await purgeInRounds((limit) => models.deleteExpired(now, limit), 10, 1),
      10,
      'one statement, ten rows',
    );
    assert.equal(await expired(), 15);
    assert.equal(
      await purgeInRounds((limit) => models.deleteExpired(now, limit), 10),
      15,
      'the rest, over two more statements',
    );
    assert.equal(await expired(), 0);
    assert.notEqual(await models.find('Interaction', live, now), undefined);
  });

  test('of 20 simultaneous spends of one code exactly one wins, and the row says it is spent', async () => {
    const value = id();
    await models.upsert('AuthorizationCode', value, {
      payload: { jti: value },
      expiresAt: Date.now() + 60_000,
    });
    const wins = await Promise.all(
      Array.from({ length: 20 }, () => models.consume('AuthorizationCode', value, Date.now())),
    );
    assert.equal(wins.filter(Boolean).length, 1);
    const found = await models.find('AuthorizationCode', value, Date.now());
    assert.equal(typeof found?.consumed, 'number');
  });

  test('revoking a grant removes what it issued, and nothing else', async () => {
    const [a, b, c] = [id(), id(), id()];
    await models.upsert('AccessToken', a, {
      payload: { jti: a },
      grantId: 'grant-x',
      expiresAt: Date.now() + 60_000,
    });
    await models.upsert('RefreshToken', b, {
      payload: { jti: b },
      grantId: 'grant-x',
      expiresAt: Date.now() + 60_000,
    });
    await models.upsert('AccessToken', c, {
      payload: { jti: c },
      grantId: 'grant-y',
      expiresAt: Date.now() + 60_000,
    });
    await models.revokeGrant('grant-x');
    assert.equal(await models.find('AccessToken', a, Date.now()), undefined);
    assert.equal(await models.find('RefreshToken', b, Date.now()), undefined);
    assert.notEqual(await models.find('AccessToken', c, Date.now()), undefined);
  });

  test('a session keeps its id, and is found by its uid', async () => {
    const value = id();
    await models.upsert('Session', value, {
      payload: { jti: value, uid: 'u-1', accountId: '3' },
      uid: 'u-1',
      expiresAt: undefined,
    });
    const found = await models.findBy('Session', 'uid', 'u-1', Date.now());
    assert.equal(found?.id, value);
    assert.equal(found?.payload.accountId, '3');
  });

  test('the adapter: of two simultaneous spends, the loser is invalid_grant and takes the grant with it', async () => {
    const { errors } = await import('oidc-provider');
    const adapter = adapterFactory({ models }, {} as ClientRegistry, errors);
    const [code, grant, token] = [id(), id(), id()];
    const expiresAt = Date.now() + 60_000;
    await models.upsert('Grant', grant, { payload: { jti: grant }, expiresAt });
    await models.upsert('AuthorizationCode', code, {
      payload: { jti: code, grantId: grant },
      grantId: grant,
      expiresAt,
    });
    await models.upsert('AccessToken', token, {
      payload: { jti: token, grantId: grant },
      grantId: grant,
      expiresAt,
    });
    const codes = adapter('AuthorizationCode');
    const outcomes = await Promise.allSettled([codes.consume(code), codes.consume(code)]);
    assert.deepEqual(outcomes.map((o) => o.status).sort(), ['fulfilled', 'rejected']);
    const lost = outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult;
    assert.equal((lost.reason as { error?: string }).error, 'invalid_grant');
    assert.equal(await models.find('Grant', grant, Date.now()), undefined, 'the grant is gone');
    assert.equal(await models.find('AccessToken', token, Date.now()), undefined, 'and what it issued');
  });
});
