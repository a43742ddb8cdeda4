// @usher/client as a project that has never seen Usher gets it: `npm pack` of the workspace (its
// prepack builds dist/), `npm install` of the tarball into a fresh project under the system's temp
// directory (so nothing resolves through Usher's own node_modules), a type check of a small
// program with the settings `tsc --init` writes, by TypeScript 7 (the root's) and TypeScript 5
// (the client's build compiler), and the program run by Node against a listening Usher on each
// store: register, sign in, who am I, and a user looked up by an id above 2^53, read exactly.
// One pack and one install per run of this file.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { newUser } from '../helpers/app.ts';
import { openTestDatabase } from '../helpers/db.ts';
import { runProcess, type ServerProcess, startServer } from '../helpers/process.ts';
import { describeEachStore } from '../helpers/stores.ts';
import {
  CLIENT_WORKSPACE,
  installPacked,
  NPM_ENV,
  type PackedClient,
  packClient,
  STALE_FILE,
  succeeded,
} from './pack.ts';

/** The root's TypeScript (7) and the one the client is built with (5): a consumer may have either. */
const COMPILERS = {
  'TypeScript 7': fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url)),
  'TypeScript 5': join(
    dirname(createRequire(join(CLIENT_WORKSPACE, 'package.json')).resolve('typescript/package.json')),
    'bin/tsc',
  ),
};
/** 2^53 + 1: JSON.parse would read it as 9007199254740992. */
const BIG_ID = 9007199254740993n;

/**
 * The consumer's program, as a TypeScript user of the package writes it: the types it states are
 * checked by tsc (a bigint id, a 404 narrowed to its code), and Node runs it as it is.
 */
const PROGRAM = `import { createUsherClient, type User } from '@usher/client';
import settings from './usher.json' with { type: 'json' };

// Token mode: Node keeps no cookies, so the client keeps the session token.
const usher = createUsherClient({ profile: 'b', baseUrl: settings.url, session: 'token' });
const account = { email: settings.email, password: settings.password, name: 'Packed Client' };

const registered = await usher.POST('/api/users', { body: account });
if (!registered.ok) throw new Error(\`register: \${registered.status} \${registered.error}\`);
const id: bigint = registered.data.id;

const signedIn = await usher.signIn({ email: account.email, password: account.password });
if (!signedIn.ok) throw new Error(\`sign in: \${signedIn.status} \${signedIn.error}\`);

const me = await usher.whoAmI();
if (!me.ok) throw new Error(\`who am I: \${me.status} \${me.error}\`);

const big = await usher.GET('/api/users/{id}', { params: { path: { id: BigInt(settings.bigId) } } });
if (!big.ok) throw new Error(\`lookup: \${big.status} \${big.error}\`);
const user: User<'b'> = big.data;

const missing = await usher.GET('/api/users/{id}', { params: { path: { id: 2n ** 63n - 1n } } });
const missingCode: 'USER_NOT_FOUND' | 'NOT_FOUND' | 'found' | 'other' = missing.ok
  ? 'found'
  : missing.status === 404
    ? missing.error
    : 'other';

console.log(
  JSON.stringify({
    registered: { id: id.toString(), type: typeof id },
    signedIn: signedIn.data.id.toString(),
    me: me.data.user.id.toString(),
    big: { id: user.id.toString(), type: typeof user.id, email: user.email },
    missing: missingCode,
    tokenKept: usher.token !== undefined,
  }),
);
`;

const temp = mkdtempSync(join(tmpdir(), 'usher-packed-client-'));
const project = join(temp, 'app');
let packed: PackedClient;

before(async () => {
  packed = await packClient(temp);
  mkdirSync(project);
  writeFileSync(
    join(project, 'package.json'),
    `${JSON.stringify({ name: 'fresh-app', private: true, type: 'module' }, null, 2)}\n`,
  );
  await installPacked(project, packed.tarball);
  succeeded(
    await runProcess(process.execPath, [COMPILERS['TypeScript 7'], '--init'], NPM_ENV, '', project),
    'tsc --init',
  );
  writeFileSync(join(project, 'main.ts'), PROGRAM);
  writeFileSync(
    join(project, 'usher.json'),
    JSON.stringify({ url: '', email: '', password: '', bigId: '0' }),
  );
});

after(() => rmSync(temp, { recursive: true, force: true }));

test('the tarball ships JavaScript and type declarations, no TypeScript source and nothing stale', () => {
  const paths = packed.files;
  for (const needed of ['dist/index.js', 'dist/index.d.ts', 'dist/client.js', 'LICENSE', 'README.md']) {
    assert.ok(paths.includes(needed), `${needed} missing from ${paths.join(', ')}`);
  }
  const source = paths.filter((path) => /\.[mc]?ts$/.test(path) && !/\.d\.[mc]?ts$/.test(path));
  assert.deepEqual(
    source,
    [],
    'TypeScript source in the package: Node will not strip types under node_modules',
  );
  assert.ok(!paths.includes(STALE_FILE), 'npm pack shipped dist/ without building it');
});

test("every relative import in the package's JavaScript and declarations names a file it ships", () => {
  const installed = join(project, 'node_modules', '@usher', 'client');
  const shipped = new Set(packed.files);
  const modules = packed.files.filter((path) => /\.(js|d\.ts)$/.test(path));
  assert.ok(modules.length > 0);
  for (const path of modules) {
    const text = readFileSync(join(installed, path), 'utf8');
    for (const [, specifier] of text.matchAll(/(?:from\s*|import\s*\(\s*)['"](\.\.?\/[^'"]+)['"]/g)) {
      const target = posix.join(posix.dirname(path), specifier!);
      assert.ok(shipped.has(target), `${path} imports ${specifier}, which the package does not ship`);
    }
  }
});

test('the installed package is publishable: not private, MIT, with its own dependencies declared', () => {
  const installed = join(project, 'node_modules', '@usher', 'client');
  const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as Record<
    string,
    unknown
  >;
  assert.notEqual(manifest.private, true, 'a private package cannot be published');
  assert.equal(manifest.license, 'MIT');
  // Installed beside it from its own declaration, not found in Usher's node_modules.
  for (const dependency of ['openapi-fetch', 'openapi-typescript-helpers']) {
    assert.ok(
      Object.hasOwn(manifest.dependencies as object, dependency),
      `${dependency} is not a dependency of the package`,
    );
    const resolved = createRequire(join(project, 'index.js')).resolve(`${dependency}/package.json`);
    assert.ok(resolved.startsWith(project), `${dependency} resolved outside the project: ${resolved}`);
  }
});

for (const [compiler, tsc] of Object.entries(COMPILERS)) {
  test(`a program using it type-checks with the settings of tsc --init (${compiler})`, async () => {
    succeeded(
      await runProcess(process.execPath, [tsc, '--noEmit', '-p', project], NPM_ENV, '', project),
      compiler,
    );
  });
}

describe('the installed client against a listening Usher', () => {
  describeEachStore('packed @usher/client', (store) => {
    let server: ServerProcess;

    before(async () => {
      server = await startServer({ DATABASE_URL: store.url, PROFILE: 'b' });
      // A user at 2^53 + 1, planted beside the API (which cannot make such an id).
      const database = openTestDatabase(store);
      try {
        const now = new Date().toISOString();
        const email = `big.${process.pid}.${store.kind}@example.com`;
        await database.db
          .insertInto('users')
          .values({ id: BIG_ID, email, email_key: email, name: 'Big', created_at: now, updated_at: now })
          .execute();
      } finally {
        await database.close();
      }
    });
    after(() => server?.stop());

    test('registers, signs in, and reads an id above 2^53 exactly', async () => {
      const user = newUser();
      const settings = { url: server.url, email: user.email, password: user.password, bigId: String(BIG_ID) };
      writeFileSync(join(project, 'usher.json'), JSON.stringify(settings));
      const output = succeeded(
        await runProcess(process.execPath, ['main.ts'], NPM_ENV, '', project),
        'node main.ts',
      );
      const result = JSON.parse(output) as {
        registered: { id: string; type: string };
        signedIn: string;
        me: string;
        big: { id: string; type: string; email: string };
        missing: string;
        tokenKept: boolean;
      };
      assert.equal(result.registered.type, 'bigint');
      assert.equal(result.signedIn, result.registered.id);
      assert.equal(result.me, result.registered.id);
      assert.deepEqual(result.big, {
        id: '9007199254740993',
        type: 'bigint',
        email: `big.${process.pid}.${store.kind}@example.com`,
      });
      assert.equal(result.missing, 'USER_NOT_FOUND');
      assert.equal(result.tokenKept, true);
    });
  });
});
