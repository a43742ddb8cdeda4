// @usher/client (clients/typescript) against a live Usher listening on a port, in both profiles,
// on each store: registration, sign-in with a cookie and with a token, who am I, products and
// reviews with their paging headers, ids above 2^53 read and sent back exactly, and every error
// code a route answers that a fetch can provoke.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Secret, TOTP } from 'otpauth';
import {
  createUsherClient,
  type ErrorCode,
  type Failure,
  type Profile,
  type Result,
  type UsherClient,
} from '../../clients/typescript/src/index.ts';
import type { ErrorCode as DeclaredCode } from '../../src/shared/errors.ts';
import { NO_THROTTLE, newUser, startApp, type TestApp } from '../helpers/app.ts';
import { openTestDatabase } from '../helpers/db.ts';
import { describeEachStore } from '../helpers/stores.ts';

/** 2^53 + 1: the first integer a double cannot hold (JSON.parse reads it as ...992). */
const BIG_ID = 9007199254740993n;
/** 2^63-1: the largest id, which no row has. */
const UNKNOWN_ID = 2n ** 63n - 1n;
/** A sign-in throttle a test reaches in a few calls; the other limits stay out of the way. */
const SIGNIN_LIMIT = 3;
const RESET_LIMIT = 3;

/**
 * Compile-time: the union is exactly the codes Usher declares (shared/errors.ts and each feature's
 * errors.ts), so a feature's new code needs no edit here, only the regenerated client types. A
 * feature of the tests declares its codes at run time only (test/shared/error-codes.test.ts): an
 * augmentation there would join this union without being in any served document.
 */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const codesAreTheDocumented: Equal<ErrorCode, DeclaredCode> = true;
void codesAreTheDocumented;

/** The success of a result, or a test failure that shows the error. */
function ok<T>(result: Result<T, string>, what: string): T {
  if (!result.ok) assert.fail(`${what}: ${result.status} ${result.error} ${result.message ?? ''}`);
  return result.data;
}

/** The failure of a result, checked for its status and code. */
function failed<C extends string>(
  result: Result<unknown, C>,
  status: number,
  code: C,
  what: string,
): Failure<C> {
  assert.equal(result.ok, false, `${what}: expected ${status} ${code}, got a success`);
  const failure = result as Failure<C>;
  assert.deepEqual([failure.status, failure.error], [status, code], `${what}: ${failure.message ?? ''}`);
  return failure;
}

/**
 * What a browser does with Usher's cookie, for Node: keeps Set-Cookie, sends Cookie back, drops
 * it when it expires. It also records each request, to show what the client asked the browser for.
 */
function browserFetch() {
  const jar = new Map<string, string>();
  const requests: Request[] = [];
  const fetchWithCookies = async (request: Request): Promise<Response> => {
    requests.push(request);
    const headers = new Headers(request.headers);
    if (jar.size > 0) headers.set('cookie', [...jar].map(([name, value]) => `${name}=${value}`).join('; '));
    const response = await fetch(new Request(request, { headers }));
    for (const cookie of response.headers.getSetCookie()) {
      const [pair = ''] = cookie.split(';');
      const name = pair.slice(0, pair.indexOf('='));
      const value = pair.slice(pair.indexOf('=') + 1);
      const expired = /;\s*max-age=0\b/i.test(cookie) || /;\s*expires=[^;]*1970/i.test(cookie);
      if (expired || value === '') jar.delete(name);
      else jar.set(name, value);
    }
    return response;
  };
  return { fetch: fetchWithCookies, jar, requests };
}

describeEachStore('@usher/client against a live Usher', (store) => {
  // The same key for both apps: they share the database, and with it the sealed TOTP secrets.
  const encryptionKey = randomBytes(32);

  before(async () => {
    // A product at 2^53 + 1, owned by a user planted beside it: the API cannot make such an id.
    // An app started and stopped first puts the schema in place.
    await (await startApp(store, 'a')).close();
    const database = openTestDatabase(store);
    try {
      const now = new Date().toISOString();
      await database.db
        .insertInto('users')
        .values({
          id: BIG_ID,
          email: `big-owner.${process.pid}@example.com`,
          email_key: `big-owner.${process.pid}@example.com`,
          name: 'Big Owner',
          created_at: now,
          updated_at: now,
        })
        .execute();
      await database.db
        .insertInto('products')
        .values({
          id: BIG_ID,
          name: 'Big',
          description: '',
          price: 1,
          owner_id: BIG_ID,
          created_at: now,
          updated_at: now,
        })
        .execute();
    } finally {
      await database.close();
    }
  });

  for (const profile of ['a', 'b'] as const satisfies Profile[]) {
    describe(`profile ${profile.toUpperCase()}`, () => {
      let t: TestApp;
      let baseUrl = '';
      const tokenClient = () => createUsherClient({ profile, baseUrl, session: 'token' });
      const cookieClient = () => {
        const browser = browserFetch();
        return { usher: createUsherClient({ profile, baseUrl, fetch: browser.fetch }), browser };
      };
      /** A registered user and a token client signed in as them. */
      const signedIn = async () => {
        const user = newUser();
        const usher = tokenClient();
        const id = ok(await usher.POST('/api/users', { body: user }), 'register').id;
        ok(await usher.signIn(user), 'sign in');
        return { usher, user, id };
      };

      before(async () => {
        t = await startApp(store, profile, {
          encryptionKey,
          throttle: { ...NO_THROTTLE, perAccountAddress: SIGNIN_LIMIT },
          passwordReset: { perAccount: 3, perAddress: RESET_LIMIT, windowMs: 900_000 },
        });
        await t.app.listen({ host: '127.0.0.1', port: 0 });
        baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
      });
      after(() => t.close());

      test('register: 201, the user in the profile shape with a bigint id, Location to it', async () => {
        const usher = tokenClient();
        const user = newUser();
        const result = await usher.POST('/api/users', { body: user });
        const created = ok(result, 'register');
        assert.equal(result.status, 201);
        assert.equal(typeof created.id, 'bigint');
        assert.equal(created.email, user.email);
        assert.equal(created.name, user.name);
        assert.deepEqual(
          Object.keys(created).sort(),
          profile === 'a' ? ['email', 'id', 'name'] : ['createdAt', 'email', 'emailVerified', 'id', 'name'],
        );
        assert.equal(result.response.headers.get('location'), `/api/users/${created.id}`);
        const again = ok(await usher.GET('/api/users/{id}', { params: { path: { id: created.id } } }), 'get');
        assert.equal(again.id, created.id);
      });

      test('token sessions: sign in keeps the token, who am I answers, sign out forgets it', async () => {
        const usher = tokenClient();
        const user = newUser();
        const id = ok(await usher.POST('/api/users', { body: user }), 'register').id;
        assert.equal(usher.token, undefined);
        failed(await usher.whoAmI(), 401, 'UNAUTHENTICATED', 'who am I before signing in');

        const signed = ok(
          await usher.signIn({ email: user.email.toUpperCase(), password: user.password }),
          'in',
        );
        assert.equal(signed.id, id);
        assert.match(usher.token ?? '', /^[A-Za-z0-9_-]{20,}$/);
        const me = ok(await usher.whoAmI(), 'who am I');
        assert.equal(me.user.id, id);
        assert.equal(me.user.email, user.email);
        assert.equal(typeof me.session.id, 'string');

        // The token survives the client: a new one given it is the same session.
        const later = createUsherClient({ profile, baseUrl, session: 'token', token: usher.token! });
        assert.equal(ok(await later.whoAmI(), 'who am I with a kept token').session.id, me.session.id);

        ok(await usher.signOut(), 'sign out');
        assert.equal(usher.token, undefined);
        failed(await usher.whoAmI(), 401, 'UNAUTHENTICATED', 'who am I after signing out');
        failed(await later.whoAmI(), 401, 'UNAUTHENTICATED', 'the kept token after signing out');
        ok(await usher.signOut(), 'signing out twice');
      });

      test('cookie sessions: sign in through POST /api/signin, the cookie does the rest, sign out ends it', async () => {
        const { usher, browser } = cookieClient();
        const user = newUser();
        const id = ok(await usher.POST('/api/users', { body: user }), 'register').id;
        const signed = ok(await usher.signIn(user), 'sign in');
        assert.deepEqual([signed.id, signed.email, signed.name], [id, user.email, user.name]);
        assert.equal(usher.token, undefined, 'cookie mode keeps no token');
        assert.ok(browser.jar.has('usher_session'), 'the session cookie is kept');
        assert.equal(new URL(browser.requests.at(-1)!.url).pathname, '/api/signin');
        assert.ok(
          browser.requests.every((r) => r.credentials === 'include' && !r.headers.has('authorization')),
          'every request asks the browser to send its cookies, and none carries a token',
        );

        const me = ok(await usher.whoAmI(), 'who am I');
        assert.equal(me.user.id, id);
        const product = ok(
          await usher.POST('/api/products', { body: { name: 'Cookie-made', price: 5 } }),
          'a write with the cookie',
        );
        assert.equal(product.ownerId, id);

        ok(await usher.signOut(), 'sign out');
        assert.equal(browser.jar.has('usher_session'), false, 'the cookie is cleared');
        failed(await usher.whoAmI(), 401, 'UNAUTHENTICATED', 'who am I after signing out');
      });

      test('SIGNIN_FAILED: a wrong password in either mode, in the profile shape', async () => {
        const user = newUser();
        const usher = tokenClient();
        ok(await usher.POST('/api/users', { body: user }), 'register');
        const wrong = { email: user.email, password: `${user.password}!` };

        const byToken = failed(await usher.signIn(wrong), 401, 'SIGNIN_FAILED', 'POST /api/sessions');
        // POST /api/sessions has a message in both profiles; POST /api/signin only in B.
        assert.equal(typeof byToken.message, 'string');
        assert.equal(usher.token, undefined);

        const { usher: browserish } = cookieClient();
        const byCookie = failed(await browserish.signIn(wrong), 401, 'SIGNIN_FAILED', 'POST /api/signin');
        assert.equal(byCookie.message === undefined, profile === 'a', `message: ${byCookie.message}`);
      });

      test('SIGNIN_FAILED 429: throttled sign-ins carry Retry-After as retryAfter', async () => {
        const user = newUser();
        const usher = tokenClient();
        ok(await usher.POST('/api/users', { body: user }), 'register');
        for (let i = 0; i < SIGNIN_LIMIT; i++) {
          failed(
            await usher.signIn({ ...user, password: 'wrong-password' }),
            401,
            'SIGNIN_FAILED',
            `try ${i}`,
          );
        }
        const throttled = failed(await usher.signIn(user), 429, 'SIGNIN_FAILED', 'past the limit');
        assert.ok((throttled.retryAfter ?? 0) > 0, `retryAfter: ${throttled.retryAfter}`);
      });

      test('ids above 2^53 come back exact as bigints, and calls made with them find the record', async () => {
        // What a client without exact parsing would see: the id rounded to another product.
        const naive = (await (await fetch(`${baseUrl}/api/products/${BIG_ID}`)).json()) as { id: number };
        assert.equal(naive.id, 9007199254740992);

        const { usher } = await signedIn();
        const product = ok(
          await usher.GET('/api/products/{id}', { params: { path: { id: BIG_ID } } }),
          'get',
        );
        assert.equal(product.id, BIG_ID);
        assert.equal(product.ownerId, BIG_ID);

        // The next calls use the ids as they were read: written as their exact digits, in the path.
        const review = ok(
          await usher.POST('/api/products/{id}/reviews', {
            params: { path: { id: product.id } },
            body: { rating: 5, text: 'exact' },
          }),
          'a review of the big product',
        );
        assert.equal(review.productId, BIG_ID);
        const read = ok(
          await usher.GET('/api/products/{id}/reviews/{reviewId}', {
            params: { path: { id: review.productId, reviewId: review.id } },
          }),
          'the review, by the ids it came with',
        );
        assert.deepEqual(read, review);
        const reviews = ok(
          await usher.GET('/api/products/{id}/reviews', { params: { path: { id: product.id } } }),
          'the reviews of the big product',
        );
        assert.ok(reviews.some((r) => r.id === review.id));
      });

      test('products and reviews: X-Total-Count and Link read into page, and the next page followed', async () => {
        const { usher, id } = await signedIn();
        const product = ok(
          await usher.POST('/api/products', { body: { name: 'Paged', price: 100 } }),
          'create',
        );
        assert.equal(product.ownerId, id);
        const path = { id: product.id };
        for (const rating of [1, 2, 3, 4, 5]) {
          ok(
            await usher.POST('/api/products/{id}/reviews', { params: { path }, body: { rating } }),
            'review',
          );
        }

        const first = await usher.GET('/api/products/{id}/reviews', {
          params: { path, query: { size: 2, sort: '-rating' } },
        });
        assert.deepEqual(
          ok(first, 'page 1').map((r) => r.rating),
          [5, 4],
        );
        assert.ok(first.ok);
        assert.equal(first.page?.total, 5);
        assert.deepEqual(
          [first.page.first?.page, first.page.prev, first.page.next?.page, first.page.last?.page],
          [1, undefined, 2, 3],
        );
        assert.equal(first.page.next?.size, 2);
        assert.match(first.page.next?.href ?? '', /sort=-rating/);

        const last = await usher.GET('/api/products/{id}/reviews', {
          params: { path, query: { size: 2, sort: '-rating', page: first.page.last?.page } },
        });
        assert.deepEqual(
          ok(last, 'last page').map((r) => r.rating),
          [1],
        );
        assert.ok(last.ok);
        assert.deepEqual([last.page?.prev?.page, last.page?.next], [2, undefined]);

        const products = await usher.GET('/api/products', { params: { query: { size: 1 } } });
        assert.equal(ok(products, 'products').length, 1);
        assert.ok(products.ok && products.page && products.page.total >= 2, 'the big product and this one');
        // A record is not a list: no paging.
        const one = await usher.GET('/api/products/{id}', { params: { path } });
        assert.ok(one.ok && one.page === undefined);
      });

      if (profile === 'b') {
        test('GET /api/users (profile B): a paged list of users with bigint ids', async () => {
          const usher = tokenClient();
          const users = await usher.GET('/api/users', { params: { query: { size: 100, sort: '-id' } } });
          const list = ok(users, 'list users');
          assert.ok(list.some((u) => u.id === BIG_ID));
          assert.ok(users.ok && (users.page?.total ?? 0) >= 1);
        });
      }

      describe('error codes, each from a route that gives it', () => {
        test('NOT_FOUND: an unknown product, review or session', async () => {
          const { usher } = await signedIn();
          failed(
            await usher.GET('/api/products/{id}', { params: { path: { id: UNKNOWN_ID } } }),
            404,
            'NOT_FOUND',
            'product',
          );
          failed(
            await usher.GET('/api/products/{id}/reviews/{reviewId}', {
              params: { path: { id: BIG_ID, reviewId: UNKNOWN_ID } },
            }),
            404,
            'NOT_FOUND',
            'review',
          );
          failed(
            await usher.DELETE('/api/sessions/{id}', { params: { path: { id: 'no-such-session' } } }),
            404,
            'NOT_FOUND',
            'session',
          );
        });

        test('USER_NOT_FOUND: an unknown user id, {error} alone', async () => {
          const result = await tokenClient().GET('/api/users/{id}', { params: { path: { id: UNKNOWN_ID } } });
          const failure = failed(result, 404, 'USER_NOT_FOUND', 'unknown user');
          assert.equal(failure.message, undefined);
        });

        test('VALIDATION_FAILED: a field that breaks a rule, named in the message', async () => {
          const result = await tokenClient().POST('/api/users', {
            body: { ...newUser(), email: 'not-an-email' },
          });
          assert.match(failed(result, 400, 'VALIDATION_FAILED', 'bad email').message ?? '', /email/);
        });

        test('ISSUE 25: deleting your account takes an optional body: none on a fresh session, currentPassword checked when sent', async () => {
          for (const mode of ['token', 'cookie'] as const) {
            const user = newUser();
            const usher = mode === 'token' ? tokenClient() : cookieClient().usher;
            const id = ok(await usher.POST('/api/users', { body: user }), 'register').id;
            ok(await usher.signIn(user), 'sign in');
            const path = { params: { path: { id } } };
            const wrong = await usher.DELETE('/api/users/{id}', {
              ...path,
              body: { currentPassword: 'wrong-one-1' },
            });
            assert.match(
              failed(wrong, 400, 'VALIDATION_FAILED', `${mode}: a wrong password`).message ?? '',
              /^currentPassword:/,
            );
            const deleted = await usher.DELETE('/api/users/{id}', path);
            assert.equal(deleted.status, 204, `${mode}: no body, a sign-in just now`);
            failed(await usher.whoAmI(), 401, 'UNAUTHENTICATED', `${mode}: the account is gone`);
          }
        });

        test('INVALID_QUERY: a page size above 100', async () => {
          const result = await tokenClient().GET('/api/products', { params: { query: { size: 1000 } } });
          failed(result, 400, 'INVALID_QUERY', 'size=1000');
        });

        test('UNSUPPORTED_MEDIA_TYPE: a body sent as text/plain (the typed call, its content type overridden)', async () => {
          const result = await tokenClient().POST('/api/users', {
            body: newUser(),
            headers: { 'content-type': 'text/plain' },
          });
          failed(result, 415, 'UNSUPPORTED_MEDIA_TYPE', 'text/plain');
        });

        test('PAYLOAD_TOO_LARGE: a body over 1 MiB', async () => {
          const result = await tokenClient().POST('/api/users', {
            body: { ...newUser(), name: 'x'.repeat(1024 * 1024) },
          });
          failed(result, 413, 'PAYLOAD_TOO_LARGE', '1 MiB name');
        });

        test('UNAUTHENTICATED: a write without a session', async () => {
          const result = await tokenClient().POST('/api/products', { body: { name: 'Anonymous', price: 1 } });
          failed(result, 401, 'UNAUTHENTICATED', 'anonymous write');
        });

        test("FORBIDDEN: changing someone else's product", async () => {
          const owner = await signedIn();
          const other = await signedIn();
          const product = ok(
            await owner.usher.POST('/api/products', { body: { name: 'Mine', price: 1 } }),
            'create',
          );
          const result = await other.usher.PUT('/api/products/{id}', {
            params: { path: { id: product.id } },
            body: { name: 'Theirs', price: 2 },
          });
          failed(result, 403, 'FORBIDDEN', "another user's product");
        });

        test('EMAIL_TAKEN: registering an email again, in another letter case', async () => {
          const usher = tokenClient();
          const user = newUser();
          ok(await usher.POST('/api/users', { body: user }), 'register');
          const again = await usher.POST('/api/users', {
            body: { ...user, email: user.email.toUpperCase() },
          });
          failed(again, 409, 'EMAIL_TAKEN', 'the same email');
        });

        test('INVALID_TOKEN: a password reset or email verification with an unknown token', async () => {
          const usher = tokenClient();
          const token = randomBytes(32).toString('base64url');
          failed(
            await usher.POST('/api/password/reset', { body: { token, password: 'a-new-password' } }),
            400,
            'INVALID_TOKEN',
            'reset',
          );
          failed(await usher.POST('/api/email/verify', { body: { token } }), 400, 'INVALID_TOKEN', 'verify');
        });

        test('TOO_MANY_REQUESTS: password reset asks past the per-address limit, with retryAfter', async () => {
          const usher = tokenClient();
          // The limit counts every ask from 127.0.0.1 in the window, the other profile's too.
          let result = await usher.POST('/api/password/forgot', { body: { email: newUser().email } });
          for (let i = 0; i < RESET_LIMIT && result.ok; i++) {
            assert.equal(result.status, 202);
            result = await usher.POST('/api/password/forgot', { body: { email: newUser().email } });
          }
          const failure = failed(result, 429, 'TOO_MANY_REQUESTS', 'past the limit');
          assert.ok((failure.retryAfter ?? 0) > 0, `retryAfter: ${failure.retryAfter}`);
        });

        test('HEADERS_TOO_LARGE: request headers over 16 KiB, refused before any route', async () => {
          const result = await tokenClient().GET('/api/products', {
            headers: { 'x-padding': 'a'.repeat(17 * 1024) },
          });
          failed(result, 431, 'HEADERS_TOO_LARGE', '17 KiB header');
        });

        test('TOTP_ALREADY_ON, and a sign-in that needs a code (secondFactor)', async () => {
          const { usher, user } = await signedIn();
          const setup = ok(
            await usher.POST('/api/mfa/totp', { body: { password: user.password } }),
            'set up',
          );
          const code = new TOTP({ secret: Secret.fromBase32(setup.secret) }).generate();
          const { recoveryCodes } = ok(
            await usher.POST('/api/mfa/totp/confirm', { body: { code } }),
            'confirm',
          );
          failed(
            await usher.POST('/api/mfa/totp', { body: { password: user.password } }),
            409,
            'TOTP_ALREADY_ON',
            'set up again',
          );

          const fresh = tokenClient();
          const needsCode = failed(await fresh.signIn(user), 401, 'SIGNIN_FAILED', 'password alone');
          assert.equal(needsCode.secondFactor, 'totp');
          ok(await fresh.signIn({ ...user, code: recoveryCodes[0]! }), 'with a recovery code');
          ok(await fresh.whoAmI(), 'who am I');
        });
      });

      test('a number id past 2^53 is refused before it is sent (it may be rounded already)', async () => {
        const usher = tokenClient();
        await assert.rejects(
          usher.GET('/api/products/{id}', {
            params: { path: { id: Number(BIG_ID) as unknown as bigint } },
          }),
          RangeError,
        );
      });
    });
  }
});

/** Compile-time: a client of one profile has only its routes (GET /api/users is B's). */
export function profileRoutes(a: UsherClient<'a'>, b: UsherClient<'b'>) {
  // @ts-expect-error: profile A does not serve GET /api/users
  void a.GET('/api/users');
  void b.GET('/api/users');
}

/** Compile-time: `status` narrows `error` to the codes the document lists for that status. */
export async function statusNarrowsCode(b: UsherClient<'b'>) {
  const result = await b.GET('/api/products/{id}', { params: { path: { id: 1n } } });
  if (!result.ok && result.status === 404) {
    const code: 'NOT_FOUND' | 'USER_NOT_FOUND' = result.error;
    // @ts-expect-error: a 404 is never VALIDATION_FAILED
    const wrong: 'VALIDATION_FAILED' = result.error;
    void [code, wrong];
  }
  const list = await b.GET('/api/products');
  if (list.ok) void list.page.total; // a paged list: page is always there
  if (result.ok) {
    // @ts-expect-error: a single product is not paged
    void result.page.total;
  }
}
