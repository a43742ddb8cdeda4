// What the admin API tests share: staff accounts (the role set as `usher users set-role` sets it),
// requests with a Bearer session, and the shape of an error answer.
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import type { AccountRole } from '../../src/users/user.ts';
import { setRole } from '../helpers/admin.ts';
import { newUser, register, signIn, type TestApp, testConfig } from '../helpers/app.ts';
import type { Store } from '../helpers/stores.ts';

export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

export interface Account {
  id: bigint;
  email: string;
  name: string;
  password: string;
}

export interface SignedIn extends Account {
  token: string;
}

/** A registered account with `role` (set through the CLI's service), signed in. */
export async function staff(t: TestApp, store: Store, role: AccountRole): Promise<SignedIn> {
  const user = await register(t, newUser());
  if (role !== 'user') await setRole(testConfig(store, t.profile), user.email, role);
  return {
    id: user.id,
    email: user.email,
    name: user.name,
    password: user.password,
    token: await signIn(t, user),
  };
}

/** A JSON request, with a Bearer session when `token` is given. */
export function call(
  t: TestApp,
  method: Method,
  url: string,
  options: { token?: string | undefined; body?: unknown; headers?: Record<string, string> } = {},
): Promise<LightMyRequestResponse> {
  const { token, body, headers = {} } = options;
  return t.inject({
    method,
    url,
    headers: {
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { payload: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
}

/** A bound caller: `as(t, token).get(url)`. */
export function as(t: TestApp, token: string | undefined) {
  return {
    get: (url: string) => call(t, 'GET', url, { token }),
    post: (url: string, body: unknown = {}) => call(t, 'POST', url, { token, body }),
    patch: (url: string, body: unknown) => call(t, 'PATCH', url, { token, body }),
    delete: (url: string) => call(t, 'DELETE', url, { token }),
  };
}

/** `status` with exactly `{error: code, message}`, never a 500. */
export function assertError(res: LightMyRequestResponse, status: number, code: string, what: string): void {
  assert.equal(res.statusCode, status, `${what}: ${res.statusCode} ${res.body}`);
  const body = res.json();
  assert.deepEqual(Object.keys(body).sort(), ['error', 'message'], `${what}: ${res.body}`);
  assert.equal(body.error, code, `${what}: ${res.body}`);
  assert.equal(typeof body.message, 'string', what);
  assert.ok(body.message.length > 0, what);
}

/** The admin view of a user (GET /api/admin/users/{id}) by `token`, which must be allowed to read it. */
export async function adminView(t: TestApp, token: string, id: bigint): Promise<Record<string, unknown>> {
  const res = await call(t, 'GET', `/api/admin/users/${id}`, { token });
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}
