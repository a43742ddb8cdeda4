// Several Usher processes on one PostgreSQL database act as one service.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { newUser, sessionToken } from '../helpers/app.ts';
import { postJson, type ServerProcess, startServer } from '../helpers/process.ts';
import { describeUnless } from '../helpers/skip.ts';
import { freshDatabaseUrl, postgresAvailable } from '../helpers/stores.ts';

const skip = postgresAvailable ? false : 'TEST_DATABASE_URL is not set';

describeUnless(skip, 'Two instances on one database [postgres]', () => {
  let one: ServerProcess;
  let two: ServerProcess;
  let drop: () => Promise<void> = async () => {};

  before(async () => {
    const fresh = await freshDatabaseUrl('postgres');
    drop = fresh.drop;
    // Both start at once on an empty database: the migration lock must let exactly one migrate.
    [one, two] = await Promise.all([
      startServer({ DATABASE_URL: fresh.url, PROFILE: 'b' }),
      startServer({ DATABASE_URL: fresh.url, PROFILE: 'b' }),
    ]);
  });
  after(async () => {
    await Promise.all([one?.stop(), two?.stop()]);
    await drop();
  });

  test('both instances migrated the same fresh database concurrently and are ready', async () => {
    for (const server of [one, two])
      assert.equal((await fetch(`${server.url}/readyz`)).status, 200, server.output());
  });

  test('a user registered on one instance is visible and signs in on the other', async () => {
    const body = newUser();
    const created = await postJson(`${one.url}/api/users`, body);
    assert.equal(created.status, 201);
    const read = await fetch(`${two.url}/api/users/${created.json.id}`);
    assert.equal(read.status, 200);
    assert.equal(((await read.json()) as { email: string }).email, body.email);
    const signin = await postJson(`${two.url}/api/signin`, { email: body.email, password: body.password });
    assert.equal(signin.status, 200);
  });

  test('a duplicate email across instances is a 409 EMAIL_TAKEN', async () => {
    const body = newUser();
    assert.equal((await postJson(`${one.url}/api/users`, body)).status, 201);
    const dup = await postJson(`${two.url}/api/users`, { ...body, email: body.email.toUpperCase() });
    assert.equal(dup.status, 409);
    assert.equal(dup.json.error, 'EMAIL_TAKEN');
  });

  test('simultaneous registrations of one email on both instances give exactly one 201', async () => {
    const body = newUser();
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => postJson(`${(i % 2 ? one : two).url}/api/users`, body)),
    );
    const statuses = results.map((r) => r.status).sort();
    assert.deepEqual(statuses, [201, ...Array(9).fill(409)]);
  });

  test('a session started on one instance works on the other, and signing out on either ends it everywhere', async () => {
    const body = newUser();
    assert.equal((await postJson(`${one.url}/api/users`, body)).status, 201);
    const signin = await fetch(`${one.url}/api/signin`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: body.email, password: body.password }),
    });
    const token = sessionToken(signin.headers.getSetCookie());
    assert.ok(token);
    const write = (server: ServerProcess) =>
      fetch(`${server.url}/api/products`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ name: 'Shared', price: 1 }),
      });
    assert.equal((await write(two)).status, 201);
    const signout = await fetch(`${two.url}/api/signout`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(signout.status, 204);
    assert.equal((await write(one)).status, 401);
  });
});
