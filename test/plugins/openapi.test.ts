import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { startApp, type TestApp } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';

const COMMON = [
  'GET /api/users/{id}',
  'POST /api/users',
  'PUT /api/users/{id}',
  'DELETE /api/users/{id}',
  'POST /api/signin',
  'POST /api/signout',
  'POST /api/password/forgot',
  'POST /api/password/reset',
  'POST /api/email/verify',
  'POST /api/email/verify/resend',
  'POST /api/sessions',
  'GET /api/session',
  'GET /api/sessions',
  'DELETE /api/sessions',
  'DELETE /api/sessions/{id}',
  'POST /api/passkeys/register/options',
  'POST /api/passkeys/register',
  'GET /api/passkeys',
  'DELETE /api/passkeys/{id}',
  'POST /api/signin/passkey/options',
  'POST /api/signin/passkey',
  'POST /api/mfa/totp',
  'POST /api/mfa/totp/confirm',
  'DELETE /api/mfa/totp',
  'GET /api/products',
  'POST /api/products',
  'GET /api/products/{id}',
  'PUT /api/products/{id}',
  'DELETE /api/products/{id}',
  'GET /api/products/{id}/reviews',
  'POST /api/products/{id}/reviews',
  'GET /api/products/{id}/reviews/{reviewId}',
  'PUT /api/products/{id}/reviews/{reviewId}',
  'DELETE /api/products/{id}/reviews/{reviewId}',
  'GET /healthz',
  'GET /readyz',
  'GET /metrics',
];
const EXPECTED = { a: COMMON, b: [...COMMON, 'GET /api/users', 'POST /rest'] };

type Operation = {
  responses: Record<
    string,
    {
      description: string;
      content?: Record<string, { schema: { properties?: Record<string, { enum?: string[] }> } }>;
    }
  >;
  security?: unknown[];
};
type Doc = {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { securitySchemes: Record<string, unknown> };
};

function operations(doc: Doc): string[] {
  return Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.keys(methods)
      .filter((m) => m !== 'head')
      .map((m) => `${m.toUpperCase()} ${path}`),
  );
}

describeEachStore('GET /openapi.json', (store) => {
  const apps: Record<'a' | 'b', TestApp> = {} as never;
  before(async () => {
    apps.a = await startApp(store, 'a');
    apps.b = await startApp(store, 'b');
  });
  after(async () => {
    await apps.a.close();
    await apps.b.close();
  });

  for (const profile of ['a', 'b'] as const) {
    test(`ISSUE 7 (${profile}): the document is valid OpenAPI 3.1`, async () => {
      const res = await apps[profile].get('/openapi.json');
      assert.equal(res.statusCode, 200);
      const doc = res.json() as Doc;
      assert.equal(doc.openapi, '3.1.0');
      const result = await new Validator().validate(doc as never);
      assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
    });

    test(`ISSUE 7 (${profile}): every route of the running profile appears, and nothing else`, async () => {
      const doc = (await apps[profile].get('/openapi.json')).json() as Doc;
      assert.deepEqual(operations(doc).sort(), [...EXPECTED[profile]].sort());
      // Each documented operation is really served (a 404 here would be "no such route").
      for (const op of EXPECTED[profile]) {
        const [method, path] = op.split(' ') as [string, string];
        const res = await apps[profile].inject({
          method: method as 'GET',
          url: path.replace('{id}', '1').replace('{reviewId}', '1'),
        });
        assert.ok(!(res.statusCode === 404 && res.json().message === 'No such route.'), `${op} is served`);
      }
    });

    test(`ISSUE 7 (${profile}): every operation documents its success and its error codes`, async () => {
      const doc = (await apps[profile].get('/openapi.json')).json() as Doc;
      for (const [path, methods] of Object.entries(doc.paths)) {
        for (const [method, op] of Object.entries(methods)) {
          if (path === '/metrics' || path === '/healthz') continue;
          const failure = op.responses.default;
          assert.ok(failure, `${method} ${path} has a default (error) response`);
          const codes = failure.content?.['application/json']?.schema.properties?.error?.enum ?? [];
          if (path !== '/rest') assert.ok(codes.length > 0, `${method} ${path} lists its error codes`);
        }
      }
      const get = doc.paths['/api/users/{id}']!.get!;
      assert.deepEqual(get.responses.default!.content!['application/json']!.schema.properties!.error!.enum, [
        'USER_NOT_FOUND',
        'UNAVAILABLE',
        'INTERNAL',
      ]);
      const signin = doc.paths['/api/signin']!.post!;
      assert.deepEqual(
        signin.responses.default!.content!['application/json']!.schema.properties!.error!.enum,
        ['SIGNIN_FAILED'],
      );
    });

    test(`ISSUE 7 (${profile}): the session cookie and bearer schemes are documented and required on writes`, async () => {
      const doc = (await apps[profile].get('/openapi.json')).json() as Doc;
      assert.deepEqual(Object.keys(doc.components.securitySchemes).sort(), ['bearerToken', 'sessionCookie']);
      assert.deepEqual(doc.paths['/api/products']!.post!.security, [
        { sessionCookie: [] },
        { bearerToken: [] },
      ]);
      assert.equal(doc.paths['/api/products']!.get!.security, undefined);
      for (const [path, method] of [
        ['/api/passkeys', 'get'],
        ['/api/passkeys/register/options', 'post'],
        ['/api/passkeys/register', 'post'],
        ['/api/passkeys/{id}', 'delete'],
      ] as const)
        assert.deepEqual(
          doc.paths[path]![method]!.security,
          [{ sessionCookie: [] }, { bearerToken: [] }],
          path,
        );
      assert.equal(doc.paths['/api/signin/passkey']!.post!.security, undefined);
      assert.deepEqual(
        doc.paths['/api/signin/passkey']!.post!.responses.default!.content!['application/json']!.schema
          .properties!.error!.enum,
        ['SIGNIN_FAILED'],
      );
    });
  }

  test('ISSUE 7: no schema in the document lists a password among response fields', async () => {
    const doc = (await apps.b.get('/openapi.json')).json() as Doc;
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        for (const [status, response] of Object.entries(op.responses)) {
          const text = JSON.stringify(response.content ?? {});
          assert.ok(!/"password"|passwordHash|password_hash/.test(text), `${method} ${path} ${status}`);
        }
      }
    }
  });
});
