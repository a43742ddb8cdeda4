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
  'GET /api/account',
  'GET /api/admin/users',
  'GET /api/admin/users/{id}',
  'PATCH /api/admin/users/{id}',
  'POST /api/admin/users',
  'POST /api/admin/users/import',
  'POST /api/admin/users/{id}/disable',
  'POST /api/admin/users/{id}/enable',
  'POST /api/admin/users/{id}/password-reset',
  'POST /api/admin/users/{id}/verification',
  'DELETE /api/admin/users/{id}',
  'DELETE /api/admin/users/{id}/sessions',
  'DELETE /api/admin/users/{id}/mfa',
  'GET /api/admin/audit',
  'GET /api/account/activity',
  'POST /api/admin/webhooks',
  'GET /api/admin/webhooks',
  'GET /api/admin/webhooks/{id}',
  'DELETE /api/admin/webhooks/{id}',
  'GET /api/admin/webhooks/{id}/deliveries',
  'POST /api/admin/webhooks/{id}/deliveries/{deliveryId}/retry',
  'GET /api/identities',
  'DELETE /api/identities/{id}',
  'GET /api/oauth/providers',
  'GET /api/oauth/{provider}/start',
  'GET /api/oauth/{provider}/callback',
  'POST /api/oauth/{provider}/callback',
  'POST /api/sessions/oauth',
  'POST /api/session/token',
  'GET /api/passkeys',
  'DELETE /api/passkeys/{id}',
  'POST /api/signin/passkey/options',
  'POST /api/signin/passkey',
  'POST /api/signin/second-factor',
  'POST /api/signin/email-link',
  'POST /api/signin/email-link/verify',
  'POST /api/signin/email-code',
  'POST /api/signin/email-code/verify',
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

type SchemaObject = {
  type?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
  enum?: string[];
  $ref?: string;
  additionalProperties?: boolean;
  properties?: Record<string, SchemaObject>;
};
type Operation = {
  operationId?: string;
  description?: string;
  tags?: string[];
  parameters?: { name: string; in: string; schema: SchemaObject }[];
  responses: Record<
    string,
    {
      description: string;
      headers?: Record<string, unknown>;
      content?: Record<string, { schema: SchemaObject }>;
    }
  >;
  security?: unknown[];
};
type Doc = {
  openapi: string;
  info: { contact?: { url?: string }; license?: { identifier?: string } };
  servers?: { url: string }[];
  tags: { name: string }[];
  paths: Record<string, Record<string, Operation>>;
  components: {
    securitySchemes: Record<string, unknown>;
    schemas: Record<string, SchemaObject & { properties: Record<string, SchemaObject> }>;
  };
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
          url: path.replace('{id}', '1').replace('{reviewId}', '1').replace('{deliveryId}', '1'),
        });
        assert.ok(!(res.statusCode === 404 && res.json().message === 'No such route.'), `${op} is served`);
      }
    });

    test(`ISSUE 15 (${profile}): every operation has an operationId, a description, a declared tag and per-status errors`, async () => {
      const doc = (await apps[profile].get('/openapi.json')).json() as Doc;
      const declared = new Set(doc.tags.map((t) => t.name));
      const ids = new Set<string>();
      for (const [path, methods] of Object.entries(doc.paths)) {
        for (const [method, op] of Object.entries(methods)) {
          const where = `${method.toUpperCase()} ${path}`;
          assert.match(op.operationId ?? '', /^[a-z][A-Za-z]+$/, `${where} has an operationId`);
          assert.ok(!ids.has(op.operationId!), `${where}: operationId ${op.operationId} is unique`);
          ids.add(op.operationId!);
          assert.ok((op.description ?? '').length > 10, `${where} has a description`);
          assert.ok(op.tags?.length === 1 && declared.has(op.tags[0]!), `${where} has a declared tag`);
          assert.equal(op.responses.default, undefined, `${where} lists errors by status, not under default`);
          for (const [status, response] of Object.entries(op.responses)) {
            if (Number(status) < 400) continue;
            const ref = response.content?.['application/json']?.schema.$ref ?? '';
            assert.match(
              ref,
              new RegExp(`^#/components/schemas/(CodeOnly)?Error${status}$`),
              `${where} ${status}`,
            );
            const component = doc.components.schemas[ref.split('/').pop()!]!;
            const codes = [...response.description.matchAll(/`([A-Z_]+)`:/g)].map((m) => m[1]);
            assert.ok(codes.length > 0, `${where} ${status} names its codes`);
            for (const code of codes)
              assert.ok(
                component.properties.error!.enum!.includes(code!),
                `${where} ${status}: ${code} in the enum`,
              );
          }
        }
      }
      // The documented endpoints' errors are the code alone; sign-in failures are all SIGNIN_FAILED.
      const get = doc.paths['/api/users/{id}']!.get!;
      assert.equal(
        get.responses['404']!.content!['application/json']!.schema.$ref,
        '#/components/schemas/CodeOnlyError404',
      );
      assert.match(get.responses['404']!.description, /^`USER_NOT_FOUND`:/);
      const signin = doc.paths['/api/signin']!.post!;
      for (const status of ['400', '401', '403', '413', '415', '429', '500', '503']) {
        const codes = [...signin.responses[status]!.description.matchAll(/`([A-Z_]+)`:/g)].map((m) => m[1]);
        assert.deepEqual(codes, ['SIGNIN_FAILED'], status);
        assert.equal(
          signin.responses[status]!.content!['application/json']!.schema.$ref,
          `#/components/schemas/${profile === 'a' ? 'CodeOnlyError' : 'Error'}${status}`,
        );
      }
      assert.equal(doc.components.schemas.Error404!.additionalProperties, false);
      assert.deepEqual(Object.keys(doc.components.schemas.Error404!.properties), ['error', 'message']);
      // In alphabetical order, whoever declares them (shared/schemas.ts codesAt).
      assert.deepEqual(doc.components.schemas.Error404!.properties.error!.enum, [
        'NOT_FOUND',
        'USER_NOT_FOUND',
      ]);
    });

    test(`ISSUE 15 (${profile}): named components for the user, product, review, session and errors`, async () => {
      const doc = (await apps[profile].get('/openapi.json')).json() as Doc;
      const names = Object.keys(doc.components.schemas);
      for (const name of [
        'User',
        'Product',
        'Review',
        'Session',
        'SessionListItem',
        'Passkey',
        'Error400',
        'Error404',
      ])
        assert.ok(names.includes(name), name);
      assert.ok(!names.some((n) => n.startsWith('def-')), 'no anonymous components');
      assert.deepEqual(
        Object.keys(doc.components.schemas.User!.properties).sort(),
        profile === 'a' ? ['email', 'id', 'name'] : ['createdAt', 'email', 'emailVerified', 'id', 'name'],
      );
      assert.equal(
        doc.paths['/api/users/{id}']!.get!.responses['200']!.content!['application/json']!.schema.$ref,
        '#/components/schemas/User',
      );
      // Every component is used somewhere (no leftovers of the other profile).
      const text = JSON.stringify(doc.paths) + JSON.stringify(doc.components.schemas);
      for (const name of names) assert.ok(text.includes(`"#/components/schemas/${name}"`), `${name} is used`);
    });

    test(`ISSUE 15 (${profile}): ids are int64 up to 2^63-1 exactly; path ids, page and size are integers with bounds`, async () => {
      const res = await apps[profile].get('/openapi.json');
      const doc = res.json() as Doc;
      const id = doc.components.schemas.Product!.properties.id!;
      assert.equal(id.type, 'integer');
      assert.equal(id.format, 'int64');
      assert.equal(id.minimum, 1);
      // The exact digits in the text (a double would print 9223372036854775808 or 9223372036854776000).
      assert.match(res.body, /"maximum":9223372036854775807[,}]/);
      assert.doesNotMatch(res.body, /922337203685477(5808|6000)/);
      const param = (path: string, name: string, method = 'get') =>
        doc.paths[path]![method]!.parameters!.find((p) => p.name === name)!.schema;
      assert.deepEqual(
        { ...param('/api/products/{id}', 'id'), maximum: undefined },
        { type: 'integer', format: 'int64', minimum: 1, maximum: undefined },
      );
      assert.deepEqual(
        { ...param('/api/products', 'size'), description: undefined },
        { type: 'integer', format: 'int32', minimum: 1, maximum: 100, description: undefined },
      );
      assert.equal(param('/api/products', 'page').type, 'integer');
      assert.equal(param('/api/products', 'page').minimum, 1);
    });

    test(`ISSUE 15 (${profile}): response headers are documented`, async () => {
      const doc = (await apps[profile].get('/openapi.json')).json() as Doc;
      const headers = (path: string, method: string, status: string) =>
        Object.keys(doc.paths[path]![method]!.responses[status]!.headers ?? {});
      assert.deepEqual(headers('/api/products', 'post', '201'), ['Location']);
      assert.deepEqual(headers('/api/users', 'post', '201'), ['Location']);
      assert.deepEqual(headers('/api/products', 'get', '200'), ['X-Total-Count', 'Link']);
      assert.deepEqual(headers('/api/products/{id}/reviews', 'get', '200'), ['X-Total-Count', 'Link']);
      assert.deepEqual(headers('/api/signin', 'post', '200'), ['Set-Cookie']);
      assert.deepEqual(headers('/api/signout', 'post', '204'), ['Set-Cookie']);
      assert.deepEqual(headers('/api/signin', 'post', '429'), ['Retry-After']);
      assert.deepEqual(headers('/api/signin', 'post', '401'), ['Usher-Second-Factor']);
      assert.deepEqual(headers('/api/password/forgot', 'post', '429'), ['Retry-After']);
      for (const [path, methods] of Object.entries(doc.paths))
        for (const [method, op] of Object.entries(methods))
          if (op.responses['429'])
            assert.ok(headers(path, method, '429').includes('Retry-After'), `${method} ${path}`);
    });

    test(`ISSUE 15 (${profile}): servers, contact and license`, async () => {
      const doc = (await apps[profile].get('/openapi.json')).json() as Doc;
      assert.equal(doc.servers?.length, 1);
      assert.match(doc.servers![0]!.url, /^http:\/\/localhost:\d+$/);
      assert.ok(doc.info.contact?.url);
      assert.equal(doc.info.license?.identifier, 'MIT');
    });

    test(`ISSUE 15 (${profile}): real failures match the documented body of their status`, async () => {
      const doc = (await apps[profile].get('/openapi.json')).json() as Doc;
      const check = async (path: string, method: string, res: { statusCode: number; json(): unknown }) => {
        const response = doc.paths[path]![method]!.responses[String(res.statusCode)];
        assert.ok(response, `${method} ${path} documents ${res.statusCode}`);
        const name = response.content!['application/json']!.schema.$ref!.split('/').pop()!;
        const component = doc.components.schemas[name]!;
        const body = res.json() as Record<string, string>;
        assert.deepEqual(Object.keys(body).sort(), Object.keys(component.properties).sort(), name);
        assert.ok(component.properties.error!.enum!.includes(body.error!), `${body.error} in ${name}`);
      };
      const app = apps[profile];
      await check('/api/users/{id}', 'get', await app.get('/api/users/987654321'));
      await check('/api/products/{id}', 'get', await app.get('/api/products/987654321'));
      await check('/api/products', 'get', await app.get('/api/products?size=0'));
      await check('/api/products', 'post', await app.post('/api/products', { name: 'x', price: 1 }));
      await check('/api/users', 'post', await app.post('/api/users', { email: 'x' }));
      await check(
        '/api/signin',
        'post',
        await app.post('/api/signin', { email: 'no@example.com', password: 'x' }),
      );
      await check('/api/signin', 'post', await app.post('/api/signin', '[1]'));
      await check(
        '/api/sessions',
        'post',
        await app.post('/api/sessions', { email: 'no@example.com', password: 'x' }),
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
      // The staff routes name the role their session needs (OpenAPI 3.1 role names).
      assert.deepEqual(doc.paths['/api/admin/users']!.get!.security, [
        { sessionCookie: ['support', 'admin'] },
        { bearerToken: ['support', 'admin'] },
      ]);
      assert.deepEqual(doc.paths['/api/admin/users/{id}/disable']!.post!.security, [
        { sessionCookie: ['admin'] },
        { bearerToken: ['admin'] },
      ]);
      assert.match(
        doc.paths['/api/signin/passkey']!.post!.responses['401']!.description,
        /^`SIGNIN_FAILED`:/,
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
