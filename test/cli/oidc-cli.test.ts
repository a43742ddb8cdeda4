// `usher clients …` and `usher keys …` as an operator runs them: real CLI processes on the
// database of a running app (in this process), whose token endpoint shows what the secrets do.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { openDatabase } from '../../src/db/database.ts';
import { compose } from '../../src/features.ts';
import { CLIENT_CACHE_MS } from '../../src/oidc/clients.ts';
import { runProcess } from '../helpers/process.ts';
import { describeEachStore, freshDatabaseUrl } from '../helpers/stores.ts';
import { API, OIDC_ENCRYPTION_KEY, type OidcTestApp, startOidcApp } from '../helpers/usher-oidc.ts';

/** The entry `npx usher` runs: the Node version check, then src/cli/main.ts. */
const CLI = fileURLToPath(new URL('../../bin/usher.mjs', import.meta.url));

const cli = (env: Record<string, string>, args: string[]) =>
  runProcess(process.execPath, [CLI, ...args], env);

interface ListedClient {
  clientId: string;
  name: string;
  public: boolean;
  firstParty: boolean;
  redirectUris: string[];
  postLogoutRedirectUris: string[];
  grantTypes: string[];
  createdAt: string;
}

interface ListedKey {
  kid: string;
  alg: string;
  status: 'signing' | 'next' | 'published' | 'retired';
  createdAt: string;
  signsFrom: string;
  retiredAt?: string;
}

/**
 * An id as a command-line argument. Ids are random base64url and 1 in 64 begins with "-", which
 * the CLI reads as an option unless it follows "--" (the last test here is about that); the other
 * tests are about something else, so they pass such an id after "--".
 */
const asArgument = (id: string) => (id.startsWith('-') ? ['--', id] : [id]);

const jsonLines = <T>(stdout: string): T[] =>
  stdout
    .trim()
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as T);

describeEachStore('admin CLI: OpenID Connect clients and keys', (store) => {
  let t: OidcTestApp;
  let env: Record<string, string>;
  // The app's clock: real time, moved ahead where a test waits out the bound within which the
  // running app sees a change the CLI made (CLIENT_CACHE_MS, decision 418).
  let ahead = 0;
  const clock = () => Date.now() + ahead;
  before(async () => {
    t = await startOidcApp(store, 'a', {}, { clock });
    env = { DATABASE_URL: store.url, ENCRYPTION_KEY: OIDC_ENCRYPTION_KEY.toString('base64') };
  });
  after(() => t.close());

  /** A client_credentials token request at the running app: the status says whether the secret works. */
  async function credentialsGrant(
    clientId: string,
    secret: string,
  ): Promise<{ status: number; error?: string }> {
    const response = await fetch(`${t.issuer}/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', resource: API }),
    });
    const body = (await response.json()) as { error?: string; access_token?: string };
    return { status: response.status, ...(body.error ? { error: body.error } : {}) };
  }

  async function add(args: string[]): Promise<{ clientId: string; clientSecret?: string }> {
    const run = await cli(env, ['clients', 'add', ...args]);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stderr, '');
    const lines = run.stdout.trim().split('\n');
    assert.equal(lines.length, 1, 'one line: the JSON object');
    return JSON.parse(lines[0]!) as { clientId: string; clientSecret?: string };
  }

  const listClients = async () => {
    const run = await cli(env, ['clients', 'list', '--json']);
    assert.equal(run.code, 0, run.stderr);
    return { run, clients: jsonLines<ListedClient>(run.stdout) };
  };

  test('clients add prints exactly {"clientId","clientSecret"}; a public client only its clientId', async () => {
    const confidential = await add(['--name', 'Billing', '--redirect-uri', 'https://billing.example.com/cb']);
    assert.deepEqual(Object.keys(confidential), ['clientId', 'clientSecret']);
    assert.match(confidential.clientId, /^[A-Za-z0-9_-]{16,}$/);
    assert.match(confidential.clientSecret!, /^[A-Za-z0-9_-]{32,}$/);
    const pub = await add(['--name', 'Mobile', '--redirect-uri', 'com.example.mobile:/callback', '--public']);
    assert.deepEqual(Object.keys(pub), ['clientId']);
    assert.notEqual(pub.clientId, confidential.clientId);

    const { clients } = await listClients();
    const billing = clients.find((c) => c.clientId === confidential.clientId)!;
    assert.equal(billing.name, 'Billing');
    assert.equal(billing.public, false);
    assert.deepEqual(billing.redirectUris, ['https://billing.example.com/cb']);
    assert.deepEqual(billing.grantTypes, ['authorization_code', 'refresh_token']);
    const mobile = clients.find((c) => c.clientId === pub.clientId)!;
    assert.equal(mobile.public, true);
    assert.deepEqual(mobile.redirectUris, ['com.example.mobile:/callback']);
  });

  test('redirect URIs that are not https, loopback http or a native scheme are refused (exit 1, a clear message)', async () => {
    const before = (await listClients()).clients.length;
    for (const uri of [
      'http://app.example.com/callback',
      'http://192.168.1.10/callback',
      'https://app.example.com/callback#done',
      '/callback',
      'callback',
      'https://user:pw@app.example.com/callback',
      'javascript:alert(1)',
      'https://app.example.com/ca llback',
    ]) {
      const run = await cli(env, ['clients', 'add', '--name', 'Bad', '--redirect-uri', uri]);
      assert.equal(run.code, 1, `${uri}: ${run.stderr}`);
      assert.equal(run.stdout, '', uri);
      assert.ok(
        run.stderr.startsWith(`usher: VALIDATION_FAILED: --redirect-uri "${uri}" is not accepted`),
        `${uri}: ${run.stderr}`,
      );
      assert.match(run.stderr, /https/);
    }
    const postLogout = await cli(env, [
      'clients',
      'add',
      '--name',
      'Bad',
      '--redirect-uri',
      'https://app.example.com/cb',
      '--post-logout-redirect-uri',
      'http://app.example.com/out',
    ]);
    assert.equal(postLogout.code, 1);
    assert.match(
      postLogout.stderr,
      /--post-logout-redirect-uri "http:\/\/app\.example\.com\/out" is not accepted/,
    );
    for (const [args, message] of [
      [['--name', 'No URI'], /--redirect-uri is required/],
      [['--name', '', '--redirect-uri', 'https://a.example.com/cb'], /--name is required/],
      [
        ['--name', 'X', '--redirect-uri', 'https://a.example.com/cb', '--grant', 'password'],
        /--grant "password"/,
      ],
      [
        [
          '--name',
          'X',
          '--redirect-uri',
          'https://a.example.com/cb',
          '--public',
          '--grant',
          'client_credentials',
        ],
        /public client/,
      ],
    ] as const) {
      const run = await cli(env, ['clients', 'add', ...args]);
      assert.ok(run.code === 1 || run.code === 2, `${args.join(' ')}: ${run.code}`);
      assert.match(run.stderr, message);
      assert.equal(run.stdout, '');
    }
    assert.equal((await listClients()).clients.length, before, 'nothing was registered');
    // What is accepted: loopback http (any of the three names), https, a native app's scheme.
    const good = await add([
      '--name',
      'Native',
      '--redirect-uri',
      'http://127.0.0.1:8123/cb',
      '--redirect-uri',
      'http://localhost/cb',
      '--redirect-uri',
      'http://[::1]:9000/cb',
      '--redirect-uri',
      'com.example.native:/oauth',
    ]);
    assert.ok(good.clientSecret);
  });

  test('clients list: JSON lines or a table, never a secret; --first-party is listed as such', async () => {
    const first = await add([
      '--name',
      'Own app',
      '--redirect-uri',
      'https://own.example.com/cb',
      '--post-logout-redirect-uri',
      'https://own.example.com/bye',
      '--first-party',
    ]);
    const { run, clients } = await listClients();
    assert.ok(!run.stdout.includes(first.clientSecret!), 'the secret is not listed');
    assert.doesNotMatch(run.stdout, /secret/i);
    const own = clients.find((c) => c.clientId === first.clientId);
    assert.ok(own);
    assert.deepEqual(Object.keys(own).sort(), [
      'clientId',
      'createdAt',
      'firstParty',
      'grantTypes',
      'name',
      'postLogoutRedirectUris',
      'public',
      'redirectUris',
    ]);
    assert.deepEqual(own.postLogoutRedirectUris, ['https://own.example.com/bye']);
    assert.ok(!Number.isNaN(Date.parse(own.createdAt)));
    assert.equal(own.firstParty, true, '--first-party is kept');
    const table = await cli(env, ['clients', 'list']);
    assert.equal(table.code, 0);
    assert.match(table.stdout, /^CLIENT ID +NAME +TYPE +FIRST PARTY +REDIRECT URIS +GRANTS\n/);
    assert.match(
      table.stdout,
      new RegExp(`\\n${first.clientId} +Own app +confidential +yes +https://own\\.example\\.com/cb `),
    );
    assert.ok(!table.stdout.includes(first.clientSecret!));
  });

  test('rotate-secret: a new secret, and the old one stops working at the token endpoint (within CLIENT_CACHE_MS)', async () => {
    const created = await add(['--name', 'Worker', '--grant', 'client_credentials']);
    assert.deepEqual(await credentialsGrant(created.clientId, created.clientSecret!), { status: 200 });
    const run = await cli(env, ['clients', 'rotate-secret', ...asArgument(created.clientId)]);
    assert.equal(run.code, 0, run.stderr);
    const rotated = JSON.parse(run.stdout) as { clientId: string; clientSecret: string };
    assert.deepEqual(Object.keys(rotated), ['clientId', 'clientSecret']);
    assert.equal(rotated.clientId, created.clientId);
    assert.notEqual(rotated.clientSecret, created.clientSecret);
    ahead += CLIENT_CACHE_MS;
    assert.deepEqual(await credentialsGrant(created.clientId, created.clientSecret!), {
      status: 401,
      error: 'invalid_client',
    });
    assert.deepEqual(await credentialsGrant(created.clientId, rotated.clientSecret), { status: 200 });

    const pub = await add(['--name', 'Public', '--redirect-uri', 'https://pub.example.com/cb', '--public']);
    const noSecret = await cli(env, ['clients', 'rotate-secret', ...asArgument(pub.clientId)]);
    assert.equal(noSecret.code, 1);
    assert.match(noSecret.stderr, /public/);
    const unknown = await cli(env, ['clients', 'rotate-secret', 'no-such-client']);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /NOT_FOUND/);
  });

  test('remove: the client is gone from the list and its secret stops working (within CLIENT_CACHE_MS)', async () => {
    const created = await add(['--name', 'Leaving', '--grant', 'client_credentials']);
    assert.deepEqual(await credentialsGrant(created.clientId, created.clientSecret!), { status: 200 });
    const run = await cli(env, ['clients', 'remove', ...asArgument(created.clientId)]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, new RegExp(`removed client ${created.clientId}`));
    assert.ok(!(await listClients()).clients.some((c) => c.clientId === created.clientId));
    ahead += CLIENT_CACHE_MS;
    assert.deepEqual(await credentialsGrant(created.clientId, created.clientSecret!), {
      status: 401,
      error: 'invalid_client',
    });
    const again = await cli(env, ['clients', 'remove', ...asArgument(created.clientId)]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /^usher: NOT_FOUND: No client has the id /);
  });

  test('keys list, rotate and retire: signing, next, published and retired; only a key that no longer signs retires', async () => {
    const listKeys = async () => {
      const run = await cli(env, ['keys', 'list', '--json']);
      assert.equal(run.code, 0, run.stderr);
      return jsonLines<ListedKey>(run.stdout);
    };
    const initial = await listKeys();
    const signing = initial.filter((k) => k.status === 'signing');
    assert.deepEqual(signing.map((k) => k.alg).sort(), ['ES256', 'RS256']);
    assert.doesNotMatch(JSON.stringify(initial), /"d"|PRIVATE/);

    const rotate = await cli(env, ['keys', 'rotate']);
    assert.equal(rotate.code, 0, rotate.stderr);
    const announced = [
      ...rotate.stdout.matchAll(/^new (RS256|ES256) key (\S+): published now, signs from (\S+)$/gm),
    ];
    assert.equal(announced.length, 2, rotate.stdout);
    const afterRotate = await listKeys();
    for (const [, alg, kid, from] of announced) {
      const key = afterRotate.find((k) => k.kid === kid)!;
      assert.equal(key.alg, alg);
      assert.equal(key.status, 'next');
      assert.equal(key.signsFrom, from);
      // A minute after the rotation (each key's own creation is a moment later than the rotation's start).
      const ahead = Date.parse(key.signsFrom) - Date.parse(key.createdAt);
      assert.ok(ahead > 50_000 && ahead <= 60_000, `signs a minute after it is made (${ahead} ms)`);
    }
    for (const key of signing) assert.equal(afterRotate.find((k) => k.kid === key.kid)!.status, 'signing');

    // Neither the key that signs nor the one about to can be retired.
    const refusedSigning = await cli(env, ['keys', 'retire', ...asArgument(signing[0]!.kid)]);
    assert.equal(refusedSigning.code, 1);
    assert.match(refusedSigning.stderr, /signs tokens now/);
    const refusedNext = await cli(env, ['keys', 'retire', ...asArgument(announced[0]![2]!)]);
    assert.equal(refusedNext.code, 1);
    assert.match(refusedNext.stderr, /about to sign/);

    // A rotation whose keys sign already (made through the service, its clock a minute back, as
    // `keys rotate` a minute ago would have): the first keys are then only published.
    const database = openDatabase(store.url, t.config.database);
    try {
      await compose({ ...t.config, databaseUrl: store.url }, database, {
        now: () => Date.now() - 60_000,
      }).oidc.keys.rotate();
    } finally {
      await database.close();
    }
    const later = await listKeys();
    for (const key of signing) assert.equal(later.find((k) => k.kid === key.kid)!.status, 'published');
    assert.equal(later.filter((k) => k.status === 'signing').length, 2);

    const es = signing.find((k) => k.alg === 'ES256')!;
    const retire = await cli(env, ['keys', 'retire', ...asArgument(es.kid)]);
    assert.equal(retire.code, 0, retire.stderr);
    assert.match(retire.stdout, new RegExp(`^retired ES256 key ${es.kid}`));
    const retired = (await listKeys()).find((k) => k.kid === es.kid)!;
    assert.equal(retired.status, 'retired');
    assert.ok(retired.retiredAt && !Number.isNaN(Date.parse(retired.retiredAt)));
    const again = await cli(env, ['keys', 'retire', ...asArgument(es.kid)]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /already retired/);
    const unknown = await cli(env, ['keys', 'retire', 'no-such-kid']);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /NOT_FOUND/);

    const table = await cli(env, ['keys', 'list']);
    assert.equal(table.code, 0);
    assert.match(table.stdout, /^KID +ALG +STATUS +CREATED +SIGNS FROM +RETIRED\n/);
    assert.match(table.stdout, new RegExp(`\\n${es.kid} +ES256 +retired `));
  });

  test('usage errors: exit code 2 with the usage of the command meant; --help exits 0', async () => {
    for (const [args, message, usage] of [
      [['clients', 'add'], '--name is required', 'Usage: usher clients add --name N --redirect-uri URI'],
      [['clients', 'remove'], 'clients remove needs a client ID', 'Usage: usher clients remove ID'],
      [
        ['clients', 'rotate-secret'],
        'clients rotate-secret needs a client ID',
        'Usage: usher clients rotate-secret ID',
      ],
      [['keys', 'retire'], 'keys retire needs a KID', 'Usage: usher keys retire KID'],
      [['clients', 'list', '--jsn'], "Unknown option '--jsn'", 'Usage: usher clients list [--json]'],
      [
        ['clients', 'add', '--name', 'X', '--redirect-uri'],
        "Option '--redirect-uri <value>' argument missing",
        'Usage: usher clients add',
      ],
      // ISSUE 32: a group's own usage (the list of its commands), not every command's.
      [['keys', 'frobnicate'], 'unknown command "keys frobnicate"', 'Usage: usher keys <command> [options]'],
      [['clients'], '"usher clients" needs a command', 'Usage: usher clients <command> [options]'],
    ] as const) {
      const run = await cli(env, [...args]);
      const what = args.join(' ');
      assert.equal(run.code, 2, `${what}: ${run.stderr}`);
      assert.equal(run.stdout, '', what);
      assert.ok(run.stderr.startsWith(`usher: ${message}`), `${what}: ${run.stderr}`);
      assert.ok(run.stderr.includes(`\n\n${usage}`), `${what}: ${run.stderr}`);
    }
    for (const args of [
      ['clients', 'add', '--help'],
      ['clients', 'list', '--help'],
      ['clients', 'remove', '--help'],
      ['clients', 'rotate-secret', '--help'],
      ['keys', 'list', '--help'],
      ['keys', 'rotate', '--help'],
      ['keys', 'retire', '--help'],
    ]) {
      const run = await cli(env, args);
      assert.equal(run.code, 0, args.join(' '));
      assert.ok(run.stdout.startsWith(`Usage: usher ${args.slice(0, 2).join(' ')}`), args.join(' '));
    }
  });

  test('an id is passed back to the CLI as it printed it, even one beginning with "-"', async () => {
    // Ids are random base64url: 1 in 64 begins with "-". Find one (registered through the service
    // the CLI runs), unless ids never begin with "-".
    const database = openDatabase(store.url, t.config.database);
    let dashed: string | undefined;
    try {
      const { oidc } = compose(t.config, database);
      for (let tries = 0; tries < 2000 && dashed === undefined; tries++) {
        const { clientId } = await oidc.clients.add({
          name: `Dashed ${tries}`,
          redirectUris: [],
          postLogoutRedirectUris: [],
          public: false,
          firstParty: false,
          grants: ['client_credentials'],
        });
        if (clientId.startsWith('-')) dashed = clientId;
        else await oidc.clients.remove(clientId);
      }
    } finally {
      await database.close();
    }
    if (dashed === undefined) return;
    const run = await cli(env, ['clients', 'rotate-secret', dashed]);
    assert.equal(run.code, 0, `clients rotate-secret ${dashed}: ${run.stderr}`);
    assert.equal((JSON.parse(run.stdout) as { clientId: string }).clientId, dashed);
  });

  test(
    store.kind === 'postgres'
      ? 'without ENCRYPTION_KEY on PostgreSQL: clients add and keys list fail with exit 1 and say why'
      : 'without ENCRYPTION_KEY on SQLite: a key file beside the database seals the secrets',
    async () => {
      const fresh = await freshDatabaseUrl(store.kind);
      try {
        const bare = { DATABASE_URL: fresh.url };
        const added = await cli(bare, [
          'clients',
          'add',
          '--name',
          'K',
          '--redirect-uri',
          'https://k.example.com/cb',
        ]);
        const keys = await cli(bare, ['keys', 'list', '--json']);
        if (store.kind === 'postgres') {
          for (const run of [added, keys]) {
            assert.equal(run.code, 1, run.stderr);
            assert.equal(run.stdout, '');
            assert.match(run.stderr, /^usher: UNAVAILABLE: .*ENCRYPTION_KEY/);
          }
        } else {
          assert.equal(added.code, 0, added.stderr);
          assert.deepEqual(Object.keys(JSON.parse(added.stdout)), ['clientId', 'clientSecret']);
          assert.equal(keys.code, 0, keys.stderr);
          assert.equal(jsonLines<ListedKey>(keys.stdout).length, 2);
          assert.ok(existsSync(join(dirname(fresh.url.slice('sqlite:'.length)), 'usher.key')));
        }
      } finally {
        await fresh.drop();
      }
    },
  );
});
