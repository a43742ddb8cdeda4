// `usher users import FILE` with users from other systems (issue 31): a real CLI process on the
// database of running apps (profiles A and B). Lines carry the hash their old system keeps
// (passwordHash), emailVerified and createdAt, in JSON lines or CSV; each user then signs in with
// their old password and is re-hashed as argon2id. One bad line (an unknown format, an absurd
// cost, both password and passwordHash) refuses the whole file, each bad line reported by number,
// nothing imported; a rerun skips what is there. Neither a password nor a hash is printed.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Profile } from '../../src/config.ts';
import type { Database } from '../../src/db/database.ts';
import { NO_THROTTLE, startApp, type TestApp } from '../helpers/app.ts';
import { openTestDatabase } from '../helpers/db.ts';
import { runProcess } from '../helpers/process.ts';
import { describeEachStore, type Store } from '../helpers/stores.ts';
import { madeHashes } from '../passwords/made-hashes.ts';

const CLI = fileURLToPath(new URL('../../bin/usher.mjs', import.meta.url));
const MADE = madeHashes();
const pick = (prefix: string) => MADE.find((m) => m.label.startsWith(prefix))!;
const supabase = pick('bcrypt $2b$');
const django = pick('Django pbkdf2_sha256');
const keycloak = pick('argon2id');
const passlib = pick('scrypt ln=14');

describeEachStore('usher users import with password hashes', (store: Store) => {
  const apps = {} as Record<Profile, TestApp>;
  let database: Database;
  let dir: string;
  before(async () => {
    apps.a = await startApp(store, 'a', { throttle: { ...NO_THROTTLE } });
    apps.b = await startApp(store, 'b', { throttle: { ...NO_THROTTLE } });
    database = openTestDatabase(store);
    dir = mkdtempSync(join(tmpdir(), 'usher-import-hashes-'));
  });
  after(async () => {
    await apps.a?.close();
    await apps.b?.close();
    await database?.close();
  });

  const cli = (...args: string[]) =>
    runProcess(process.execPath, [CLI, ...args], { DATABASE_URL: store.url });
  const unique = (label: string) => `${label}.${randomBytes(4).toString('hex')}@moved.example`;
  const file = (name: string, text: string) => {
    const path = join(dir, `${store.kind}-${name}`);
    writeFileSync(path, text);
    return path;
  };
  const jsonLines = (rows: unknown[]) =>
    rows.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n');
  const signin = (profile: Profile, email: string, password: string) =>
    apps[profile].post('/api/signin', { email, password });
  async function stored(email: string): Promise<string | undefined> {
    const row = await database.db
      .selectFrom('password_credentials')
      .innerJoin('users', 'users.id', 'password_credentials.user_id')
      .select('password_credentials.hash')
      .where('users.email_key', '=', email.toLowerCase())
      .executeTakeFirst();
    return row?.hash;
  }
  const listed = async () =>
    (await cli('users', 'list', '--json')).stdout
      .trim()
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as { email: string; createdAt: string });
  // Every hash, and every password but passlib's "password", a word the messages use.
  const secrets = MADE.flatMap((m) => [m.hash, m.password]).filter((secret) => secret !== 'password');
  const printsNoSecret = (output: string) => {
    for (const secret of secrets) assert.ok(!output.includes(secret), `printed: ${secret}`);
  };

  test('JSON lines from Supabase, Django, Keycloak and passlib: imported, each user signs in with their old password (A and B), re-hashed', async () => {
    const users = [supabase, django, keycloak, passlib].map((made) => ({ ...made, email: unique('jsonl') }));
    const path = file(
      'moved.jsonl',
      jsonLines([
        {
          email: users[0]!.email,
          name: 'Supa Base',
          passwordHash: users[0]!.hash,
          emailVerified: true,
          createdAt: '2022-02-02T02:02:02Z',
        },
        {
          email: users[1]!.email,
          name: 'Djan Go',
          passwordHash: users[1]!.hash,
          createdAt: '2018-08-08T08:08:08.123+00:00',
        },
        { email: users[2]!.email, name: 'Key Cloak', passwordHash: users[2]!.hash, emailVerified: false },
        {
          email: users[3]!.email,
          name: 'Pass Lib',
          passwordHash: users[3]!.hash,
          id: 'kept by the old system',
        },
      ]),
    );
    const run = await cli('users', 'import', path);
    assert.equal(run.code, 0, run.stderr);
    assert.match(
      run.stdout,
      /^imported 4, skipped 0 \(already registered\), refused 0, of 4 rows in [\d.]+ s$/m,
    );
    printsNoSecret(run.stdout + run.stderr);

    const list = await listed();
    assert.equal(list.find((u) => u.email === users[0]!.email)?.createdAt, '2022-02-02T02:02:02.000Z');
    assert.equal(list.find((u) => u.email === users[1]!.email)?.createdAt, '2018-08-08T08:08:08.123Z');

    for (const [i, user] of users.entries()) {
      const [first, second]: [Profile, Profile] = i % 2 === 0 ? ['a', 'b'] : ['b', 'a'];
      assert.equal(await stored(user.email), `imported:${user.hash}`, user.label);
      assert.equal((await signin(first, user.email, `${user.password}?`)).statusCode, 401, user.label);
      assert.equal((await signin(first, user.email, user.password)).statusCode, 200, user.label);
      assert.match((await stored(user.email)) ?? '', /^\$argon2id\$v=19\$/, user.label);
      const again = await signin(second, user.email, user.password);
      assert.equal(again.statusCode, 200, user.label);
      if (second === 'b')
        assert.equal(again.json().user.emailVerified, i === 0, `${user.label}: emailVerified`);
    }

    const rerun = await cli('users', 'import', path);
    assert.equal(rerun.code, 0, rerun.stderr);
    assert.match(rerun.stdout, /^imported 0, skipped 4 \(already registered\), refused 0, of 4 rows/m);
  });

  test('CSV with passwordHash, emailVerified and createdAt columns (any case, _ allowed); an empty cell is an absent field', async () => {
    const [hashed, none] = [unique('csv'), unique('csv-none')];
    const path = file(
      'moved.csv',
      [
        'Email,Name,Password_Hash,Email_Verified,Created_At',
        `${hashed},"Hash, Ed",${supabase.hash},TRUE,2020-01-01T00:00:00Z`,
        `${none},None,,,`,
        '',
      ].join('\r\n'),
    );
    const run = await cli('users', 'import', path);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^imported 2, skipped 0 \(already registered\), refused 0, of 2 rows/m);
    const res = await signin('b', hashed, supabase.password);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().user.emailVerified, true);
    assert.equal(res.json().user.createdAt, '2020-01-01T00:00:00.000Z');
    assert.equal(await stored(none), undefined, 'no password: an account without one');
  });

  test('one bad line refuses the whole file: every bad line by number, nothing imported, exit 1', async () => {
    const [good1, good2, bad] = [unique('good'), unique('good'), unique('bad')];
    const path = file(
      'refused.jsonl',
      jsonLines([
        { email: good1, name: 'Good', passwordHash: supabase.hash }, // 1
        { email: bad, name: 'Costly', passwordHash: `$2b$15$${'a'.repeat(53)}` }, // 2
        { email: bad, name: 'Both', password: 'both given here 1', passwordHash: django.hash }, // 3
        '', // 4
        { email: bad, name: 'Unknown', passwordHash: 'md5$seasalt$3f86d0d3d465b7b458c231bf3555c0e3' }, // 5
        { email: bad, name: 'Slow', passwordHash: `$pbkdf2-sha256$i=5000000$c2FsdHNhbHQ$${'A'.repeat(43)}` }, // 6
        { email: bad, name: 'Big', passwordHash: `$scrypt$ln=20,r=8,p=1$c2FsdHNhbHQ$${'A'.repeat(43)}` }, // 7
        {
          email: bad,
          name: 'Huge',
          passwordHash: `$argon2id$v=19$m=1048576,t=1,p=1$c2FsdHNhbHQ$${'A'.repeat(43)}`,
        }, // 8
        { email: bad, name: 'Typo', PasswordHash: supabase.hash }, // 9
        { email: good2, name: 'Good', passwordHash: django.hash }, // 10
      ]),
    );
    const run = await cli('users', 'import', path);
    assert.equal(run.code, 1, run.stdout);
    assert.match(run.stdout, /^imported 0, skipped 0 \(already registered\), refused 7, of 9 rows/m);
    const refused = [...run.stderr.matchAll(/^line (\d+): (.*)$/gm)].map(
      (m) => [Number(m[1]), m[2]] as const,
    );
    assert.deepEqual(
      refused.map(([line]) => line),
      [2, 3, 5, 6, 7, 8, 9],
    );
    const reason = (line: number) => refused.find(([l]) => l === line)?.[1] ?? '';
    assert.match(reason(2), /^passwordHash: bcrypt cost 15 is outside 4 to 14/);
    assert.match(reason(3), /^passwordHash: cannot come with password/);
    assert.match(reason(5), /^passwordHash: is not a format Usher verifies/);
    assert.match(reason(6), /^passwordHash: PBKDF2-SHA256 5000000 iterations is above 3,000,000/);
    assert.match(reason(7), /^passwordHash: scrypt 128 × N × r = 1024 MiB is above 64 MiB/);
    assert.match(reason(8), /^passwordHash: argon2 m=1048576 is outside/);
    assert.match(reason(9), /^PasswordHash: is not a field of an import line; the field is passwordHash/);
    assert.match(
      run.stderr,
      /^usher: 7 of 9 lines refused; nothing was imported\. Fix them and run the import again\.$/m,
    );
    printsNoSecret(run.stdout + run.stderr);
    const emails = (await listed()).map((u) => u.email);
    assert.ok(!emails.includes(good1) && !emails.includes(good2), 'nothing imported');
    assert.equal((await signin('b', good1, supabase.password)).statusCode, 401);
  });
});
