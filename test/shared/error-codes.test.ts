// Error codes per feature (shared/errors.ts): a feature's errors.ts declares its codes, its Feature
// names them, and the app's table is built from the features it runs. Here: a feature of the test's
// own gets its code into the OpenAPI document and its status into the answer; two owners of one
// code are refused at start (ErrorTable.of, buildApp) and at compile time (a fixture through tsc);
// a code nobody declares does not compile.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Writable } from 'node:stream';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import type { AnyFeature } from '../../src/feature.ts';
import { FEATURES, featuresOf } from '../../src/features.ts';
import { AppError, type ErrorCode, ErrorTable, GENERIC_ERRORS } from '../../src/shared/errors.ts';
import type { App } from '../../src/shared/fastify.ts';
import { failures, noContent } from '../../src/shared/schemas.ts';

const silent = new Writable({ write: (_chunk, _enc, done) => done() });
const config = () => loadConfig({ DATABASE_URL: 'sqlite::memory:', PROFILE: 'b', LOG_LEVEL: 'error' });

// At run time only: a test's augmentation of ErrorCodes would join the whole program's union, and
// test/clients/typescript-client.test.ts checks that union against the served documents.
const REFUSED = 'EXAMPLE_REFUSED' as ErrorCode;
const EXAMPLE_WHEN = 'The example feature refuses, always.';

/** A feature with one code of its own and a route that answers with it. */
const exampleFeature: AnyFeature = {
  name: 'example',
  errors: { [REFUSED]: { status: 422, when: EXAMPLE_WHEN } },
  async routes(app: App) {
    app.get(
      '/api/example',
      {
        schema: {
          summary: 'Refuses',
          operationId: 'exampleRefuses',
          tags: ['example'],
          response: { 204: noContent('Never.'), ...failures([REFUSED]) },
        },
      },
      async () => {
        throw new AppError(REFUSED, 'No, as declared.');
      },
    );
  },
};

describe('a feature declares its error codes', () => {
  test("its code is in the table, in the OpenAPI document (its status's error body, the route's failures) and in the answer", async () => {
    assert.equal(
      ErrorTable.of([...featuresOf(FEATURES), exampleFeature]).declaration(REFUSED).owner,
      'example',
    );
    const app = await buildApp(config(), { features: FEATURES.with(exampleFeature), logStream: silent });
    try {
      const document = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
      assert.deepEqual(document.components.schemas.Error422.properties.error.enum, [REFUSED]);
      const refusal = document.paths['/api/example'].get.responses['422'];
      assert.equal(refusal.description, `\`${REFUSED}\`: ${EXAMPLE_WHEN}`);
      assert.match(JSON.stringify(refusal.content), /#\/components\/schemas\/Error422/);
      const answer = await app.inject({ method: 'GET', url: '/api/example' });
      assert.equal(answer.statusCode, 422);
      assert.equal(answer.body, JSON.stringify({ error: REFUSED, message: 'No, as declared.' }));
    } finally {
      await app.close();
    }
    // An app without the feature has neither its code nor its status's body.
    const plain = await buildApp(config(), { logStream: silent });
    try {
      const document = (await plain.inject({ method: 'GET', url: '/openapi.json' })).json();
      assert.equal(document.components.schemas.Error422, undefined);
      assert.ok(!JSON.stringify(document).includes(REFUSED));
    } finally {
      await plain.close();
    }
  });

  test("the served features' codes are the generic ones and those of users, signin, totp, oauth, recovery and catalog", () => {
    const table = ErrorTable.of(featuresOf(FEATURES));
    const owners = Object.groupBy(table.codes(), (code) => table.declaration(code).owner);
    assert.deepEqual(Object.keys(owners).sort(), [
      'catalog',
      'oauth',
      'recovery',
      'shared',
      'signin',
      'totp',
      'users',
    ]);
    assert.deepEqual(owners.shared, Object.keys(GENERIC_ERRORS));
    assert.deepEqual(owners.users, ['USER_NOT_FOUND', 'EMAIL_TAKEN', 'LAST_ADMIN']);
    assert.deepEqual(table.declaration('SIGNIN_FAILED').alsoAt, [400, 403, 413, 415, 429, 500, 503]);
  });
});

describe('a code declared twice is refused', () => {
  const twice: AnyFeature = { name: 'twice', errors: { EMAIL_TAKEN: { status: 409, when: 'Again.' } } };
  const generic: AnyFeature = { name: 'generic', errors: { NOT_FOUND: { status: 404, when: 'Mine.' } } };

  test('at start: the table names both owners, and buildApp stops before it opens the database', async () => {
    assert.throws(
      () => ErrorTable.of([...featuresOf(FEATURES), twice]),
      /^Error: the error code EMAIL_TAKEN is declared twice: by users and by twice$/,
    );
    assert.throws(
      () => ErrorTable.of([generic]),
      /^Error: the error code NOT_FOUND is declared twice: by shared and by generic$/,
    );
    await assert.rejects(
      buildApp(config(), { features: FEATURES.with(twice), logStream: silent }),
      /EMAIL_TAKEN is declared twice/,
    );
  });

  const scratch = mkdtempSync(join(tmpdir(), 'usher-error-codes-'));
  after(() => rmSync(scratch, { recursive: true, force: true }));
  const shared = fileURLToPath(new URL('../../src/shared/', import.meta.url));
  const tsc = join(dirname(createRequire(import.meta.url).resolve('typescript/package.json')), 'bin', 'tsc');
  let trees = 0;

  /** tsc over shared/errors.ts (a copy) and the given files, as the project compiles: its diagnostics. */
  function compile(files: Record<string, string>): { status: number | null; out: string } {
    const root = join(scratch, `tree-${++trees}`);
    for (const name of ['errors.ts', 'body-limits.ts']) {
      mkdirSync(join(root, 'src/shared'), { recursive: true });
      copyFileSync(join(shared, name), join(root, 'src/shared', name));
    }
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(root, 'src', path)), { recursive: true });
      writeFileSync(join(root, 'src', path), text);
    }
    writeFileSync(join(root, 'package.json'), '{"type":"module"}\n');
    const compilerOptions = {
      target: 'es2024',
      module: 'nodenext',
      lib: ['es2024'],
      types: [],
      strict: true,
      noEmit: true,
      verbatimModuleSyntax: true,
      allowImportingTsExtensions: true,
    };
    writeFileSync(join(root, 'tsconfig.json'), JSON.stringify({ compilerOptions, include: ['src'] }));
    const run = spawnSync(process.execPath, [tsc, '-p', root, '--pretty', 'false'], { encoding: 'utf8' });
    return { status: run.status, out: `${run.stdout}${run.stderr}` };
  }

  const declares = (owner: string, code: string) =>
    [
      "import type { Declares, ErrorDeclarations } from '../shared/errors.ts';",
      `export const ERRORS = { ${code}: { status: 409, when: 'x' } } as const satisfies ErrorDeclarations;`,
      "declare module '../shared/errors.ts' {",
      `  interface ErrorCodes extends Declares<typeof ERRORS, '${owner}'> {}`,
      '}',
      '',
    ].join('\n');
  const throws = (code: string) =>
    `import { AppError } from './shared/errors.ts';\nexport const refuse = () => new AppError('${code}', 'no');\n`;

  test('at compile time: two owners of one code, or a feature taking a generic one, fail at the declarations', () => {
    const good = compile({ 'one/errors.ts': declares('one', 'ONE_CODE'), 'use.ts': throws('ONE_CODE') });
    assert.equal(good.status, 0, good.out);

    const two = compile({
      'one/errors.ts': declares('one', 'SAME_CODE'),
      'two/errors.ts': declares('two', 'SAME_CODE'),
      'use.ts': throws('SAME_CODE'),
    });
    assert.notEqual(two.status, 0);
    assert.match(
      two.out,
      /src\/one\/errors\.ts\(\d+,\d+\): error TS2320: Interface 'ErrorCodes' cannot simultaneously extend/,
    );
    assert.match(two.out, /src\/two\/errors\.ts\(\d+,\d+\): error TS2320: .*\n\s+Named property 'SAME_CODE'/);

    const taken = compile({ 'one/errors.ts': declares('one', 'NOT_FOUND') });
    assert.match(taken.out, /error TS2320: .*\n\s+Named property 'NOT_FOUND'/);
  });

  test('at compile time: a code that nobody declares, where an error is thrown with it', () => {
    const run = compile({ 'one/errors.ts': declares('one', 'ONE_CODE'), 'use.ts': throws('NO_ONE_CODE') });
    assert.match(run.out, /src\/use\.ts\(2,\d+\): error TS2345: Argument of type '"NO_ONE_CODE"'/);
    // In the project too (npm run typecheck): never called, only compiled.
    const undeclared = () =>
      // @ts-expect-error: NO_ONE_CODE is declared by no one
      new AppError('NO_ONE_CODE', 'no');
    void undeclared;
  });
});
