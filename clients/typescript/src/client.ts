// The client: openapi-fetch over the generated types of the server's profile, with Usher's JSON
// read and written exactly (json.ts), list paging read from the headers (paging.ts), a session
// kept by the browser (cookie) or by the client (token), and every answer turned into a Result
// whose failure carries the error code as a union type.
import createClient, {
  type Client,
  type ClientOptions,
  createQuerySerializer,
  defaultPathSerializer,
  type MaybeOptionalInit,
} from 'openapi-fetch';
import type {
  ErrorResponse,
  HttpMethod,
  OkStatus,
  PathsWithMethod,
  Readable,
  RequiredKeysOf,
  SuccessResponse,
} from 'openapi-typescript-helpers';
import {
  bigintProperties as bigintA,
  type components as ComponentsA,
  type paths as PathsA,
} from './generated/profile-a.ts';
import {
  bigintProperties as bigintB,
  type components as ComponentsB,
  type paths as PathsB,
} from './generated/profile-b.ts';
import { checkSafe, parseJson, stringifyJson } from './json.ts';
import { type Page, readPage } from './paging.ts';

/** The wire profile of the server (its PROFILE setting): it fixes the user's shape and some routes. */
export type Profile = 'a' | 'b';
/** The generated `paths` of a profile's OpenAPI document. */
export type Paths<P extends Profile> = { a: PathsA; b: PathsB }[P];
/** The named schemas of a profile's document (`User`, `Product`, `Review`, `Session`, `Error404`…). */
export type Schemas<P extends Profile> = { a: ComponentsA['schemas']; b: ComponentsB['schemas'] }[P];
/** A product (the same in both profiles). */
export type Product = Schemas<'b'>['Product'];
/** A review of a product (the same in both profiles). */
export type Review = Schemas<'b'>['Review'];

type Json = 'application/json';
type Responses = Record<string | number, unknown>;
/** What an operation answers on success (undefined for a 204). */
export type SuccessBody<Op> = Op extends { responses: infer R extends Responses }
  ? Readable<SuccessResponse<R, Json>>
  : never;
/** The error bodies an operation can answer with. */
export type ErrorBody<Op> = Op extends { responses: infer R extends Responses }
  ? Readable<ErrorResponse<R, Json>>
  : never;
/** The error codes an operation can answer with, as the document lists them. */
export type ErrorCodeOf<Op> = CodeOf<ErrorBody<Op>>;
type CodeOf<Body> = Body extends { error: infer C extends string } ? C : never;
type JsonOf<Response> = Response extends { content: { 'application/json': infer Body } }
  ? Readable<Body>
  : never;

type Operations<T> = { [Path in keyof T]: T[Path][keyof T[Path] & HttpMethod] }[keyof T];
/** Every error code Usher's documents list, in either profile. */
export type ErrorCode = ErrorCodeOf<Operations<PathsA> | Operations<PathsB>> | ConnectionFailure['error'];

/** A success: the body, 64-bit integers as bigints. */
export interface Success<T> {
  readonly ok: true;
  readonly status: number;
  readonly data: T;
  readonly page?: undefined;
  readonly response: Response;
}

/** The success of a paged list: the body is the page's items, `page` what the headers say. */
export interface PagedSuccess<T> extends Omit<Success<T>, 'page'> {
  /** X-Total-Count and the Link header, read. */
  readonly page: Page;
}

/** True when an operation's success declares X-Total-Count: a paged list. */
type IsPaged<Op> = Op extends { responses: infer R }
  ? {
      [S in keyof R]: S extends OkStatus
        ? R[S] extends { headers: { 'X-Total-Count'?: infer H } }
          ? unknown extends H
            ? never
            : true
          : never
        : never;
    }[keyof R]
  : never;
/** The success of an operation: paged when its document declares the paging headers. */
export type SuccessOf<Op> = [IsPaged<Op>] extends [never]
  ? Success<SuccessBody<Op>>
  : PagedSuccess<SuccessBody<Op>>;

/** A failure Usher answered with: `error` is one of the codes the document lists for `status`. */
export interface Failure<C extends string = ErrorCode, S extends number = number> {
  readonly ok: false;
  readonly status: S;
  readonly error: C;
  /** Present on every failure but the documented endpoints' (profile A's sign-in, unknown user ids). */
  readonly message?: string;
  /** Seconds to wait, from Retry-After (throttled sign-ins, a busy server). */
  readonly retryAfter?: number;
  /** `totp` when the password was right and a TOTP or recovery code is needed (Usher-Second-Factor). */
  readonly secondFactor?: string;
  /**
   * A mail sign-in's ticket (Usher-Second-Factor-Ticket), when the account has two-step sign-in:
   * finish with finishSignIn(ticket, code).
   */
  readonly ticket?: string;
  readonly response: Response;
}

/**
 * The failures of an operation, one per error status its document lists, so that testing
 * `status` narrows `error` to the codes of that status (`default` gives any status).
 */
export type FailureOf<Op> = Op extends { responses: infer R extends Responses }
  ? {
      [S in keyof R]: S extends OkStatus
        ? never
        : Failure<CodeOf<JsonOf<R[S]>>, S extends number ? S : number>;
    }[keyof R]
  : never;

/**
 * Refusals of a request before it reaches a route, which the documents' `info` names for every
 * request (400 BAD_REQUEST is listed by each route): headers too large, or too slow to arrive.
 */
export type ConnectionFailure = Failure<'REQUEST_TIMEOUT', 408> | Failure<'HEADERS_TOO_LARGE', 431>;

export type Result<T, C extends string = ErrorCode> = Success<T> | PagedSuccess<T> | Failure<C>;
/** The result of calling an operation. */
export type ResultOf<Op> = SuccessOf<Op> | FailureOf<Op> | ConnectionFailure;

/**
 * A response that is not an answer of Usher's: an error status without Usher's `{error}` body
 * (a proxy's page, say). Thrown, like fetch's own network errors, rather than returned.
 */
export class UnexpectedResponseError extends Error {
  readonly response: Response;
  constructor(response: Response, detail: string) {
    super(`${response.status} ${response.statusText} from ${response.url}: ${detail}`);
    this.name = 'UnexpectedResponseError';
    this.response = response;
  }
}

type InitParam<Init> = RequiredKeysOf<Init> extends never ? [Init?] : [Init];
/** openapi-fetch's method signature, answered with a Result. */
export type ResultMethod<T extends {}, M extends HttpMethod> = <
  Path extends PathsWithMethod<T, M>,
  Init extends MaybeOptionalInit<T[Path], M & keyof T[Path]>,
>(
  url: Path,
  ...init: InitParam<Init>
) => Promise<ResultOf<T[Path][M & keyof T[Path]]>>;

/** The user object of a profile (A: exactly id, email, name; B adds createdAt and emailVerified). */
export type User<P extends Profile> = SuccessBody<Paths<P>['/api/users/{id}']['get']>;
/** Who is signed in, and the session (GET /api/session). */
export type CurrentSession<P extends Profile> = SuccessBody<Paths<P>['/api/session']['get']>;
/** How a sign-in can fail: POST /api/signin's failures (cookie mode) or POST /api/sessions' (token mode). */
export type SignInFailure<P extends Profile> =
  | FailureOf<Paths<P>['/api/signin']['post']>
  | FailureOf<Paths<P>['/api/sessions']['post']>
  | ConnectionFailure;

/** How finishing a ticketed sign-in can fail (POST /api/signin/second-factor). */
export type SecondFactorFailure<P extends Profile> =
  | FailureOf<Paths<P>['/api/signin/second-factor']['post']>
  | ConnectionFailure;
/** How a sign-in with a mail's link or code can fail (POST /api/signin/email-link/verify, …/email-code/verify). */
export type MailSignInFailure<P extends Profile> =
  | FailureOf<Paths<P>['/api/signin/email-link/verify']['post']>
  | FailureOf<Paths<P>['/api/signin/email-code/verify']['post']>
  | ConnectionFailure;
/** How a native app's sign-in with an ID token can fail (POST /api/sessions/oauth). */
export type IdTokenFailure<P extends Profile> =
  | FailureOf<Paths<P>['/api/sessions/oauth']['post']>
  | ConnectionFailure;

/** An ID token from the platform's SDK (Sign in with Apple, Google's Credential Manager…). */
export interface IdTokenSignIn {
  /** The provider id (GET /api/oauth/providers). */
  readonly provider: string;
  readonly idToken: string;
  /** The nonce the app gave the SDK, exactly as it is in the token. */
  readonly nonce?: string;
  /** A current TOTP code or an unused recovery code, for an account with two-step sign-in. */
  readonly code?: string;
}

/** What a provider sign-in left in the address it sent the browser back to. */
export interface ProviderLanding {
  /** The refusal's code (`?error=`): OAUTH_FAILED, OAUTH_DENIED, ACCOUNT_EXISTS, IDENTITY_TAKEN… */
  readonly error?: string;
  /** A second-factor ticket (`#second-factor=`): finish with finishSignIn(ticket, code). */
  readonly ticket?: string;
}

/** What a sign-in mail gave: the token of its link (`#token=…`), or its code with the email. */
export type MailProof = { readonly token: string } | { readonly email: string; readonly code: string };

export interface Credentials {
  readonly email: string;
  readonly password: string;
  /** A current TOTP code or an unused recovery code, for an account with two-step sign-in. */
  readonly code?: string;
}

/**
 * How the client proves who it is. `cookie`: the browser keeps the HttpOnly session cookie that
 * POST /api/signin sets, and every call sends it (credentials: 'include'). `token`: POST
 * /api/sessions gives a token, which this client keeps and sends as `Authorization: Bearer`;
 * for servers, scripts and apps without a cookie store.
 */
export type SessionMode = 'cookie' | 'token';

export interface UsherClientOptions<P extends Profile> {
  /** The server's profile (its PROFILE setting). */
  readonly profile: P;
  /** Where Usher is, e.g. `https://usher.example.com`; '' (the default) for the page's own origin. */
  readonly baseUrl?: string;
  /** `cookie` in a browser (the default), `token` elsewhere. */
  readonly session?: SessionMode;
  /** A token kept from an earlier run (token mode). */
  readonly token?: string;
  /** A fetch to use instead of the global one. */
  readonly fetch?: (request: Request) => Promise<Response>;
}

export interface UsherClient<P extends Profile> {
  readonly profile: P;
  readonly session: SessionMode;
  /** The session token in token mode while signed in; undefined otherwise. */
  readonly token: string | undefined;
  readonly GET: ResultMethod<Paths<P>, 'get'>;
  readonly POST: ResultMethod<Paths<P>, 'post'>;
  readonly PUT: ResultMethod<Paths<P>, 'put'>;
  readonly DELETE: ResultMethod<Paths<P>, 'delete'>;
  /**
   * Signs in with a password (and a code when the account has two-step sign-in): POST /api/signin
   * in cookie mode, POST /api/sessions in token mode, which keeps the token.
   */
  signIn(credentials: Credentials): Promise<Success<User<P>> | SignInFailure<P>>;
  /**
   * Where to send the browser for a provider sign-in (`intent: 'link'`: to link it to the signed-in
   * account): GET /api/oauth/{provider}/start, to be navigated to (`location.assign`), not fetched.
   */
  providerSignInUrl(provider: string, options?: { redirectTo?: string; intent?: 'signin' | 'link' }): string;
  /** Reads the page's address after a provider sign-in: its `?error=` or `#second-factor=` ticket. */
  readProviderLanding(url: string | URL): ProviderLanding;
  /**
   * Asks for a sign-in mail: a link (POST /api/signin/email-link, the default; `redirectTo` is where
   * Usher's link page goes afterwards) or a 6-digit code (POST /api/signin/email-code). The answer is
   * the same whether or not the email has an account.
   */
  askSignInMail(
    email: string,
    options?: { via?: 'link' | 'code'; redirectTo?: string },
  ): Promise<ResultOf<Paths<P>['/api/signin/email-link']['post']>>;
  /**
   * Signs in with a sign-in mail's link token or code. In token mode the session token is taken
   * from the answer's cookie and kept. With two-step sign-in the failure carries `ticket`:
   * finishSignIn(ticket, code).
   */
  signInWithMail(proof: MailProof): Promise<Success<User<P>> | MailSignInFailure<P>>;
  /**
   * Finishes a sign-in that left a ticket, with a code: POST /api/signin/second-factor (in token
   * mode the session token is taken from the answer's cookie and kept).
   */
  finishSignIn(ticket: string, code: string): Promise<Success<User<P>> | SecondFactorFailure<P>>;
  /**
   * Native apps: signs in with the platform SDK's ID token (POST /api/sessions/oauth) and keeps the
   * session token, sent as `Authorization: Bearer` from then on.
   */
  signInWithIdToken(input: IdTokenSignIn): Promise<Success<User<P>> | IdTokenFailure<P>>;
  /**
   * A JWT access token for one of your APIs (an audience of the server's OIDC_RESOURCES), made from
   * this session: POST /api/session/token. Send it to the API as `Authorization: Bearer`.
   */
  accessToken(audience: string): Promise<ResultOf<Paths<P>['/api/session/token']['post']>>;
  /** Who is signed in: GET /api/session (401 UNAUTHENTICATED without a session). */
  whoAmI(): Promise<ResultOf<Paths<P>['/api/session']['get']>>;
  /** Ends the session (POST /api/signout) and forgets the token; signing out twice is fine. */
  signOut(): Promise<ResultOf<Paths<P>['/api/signout']['post']>>;
  /**
   * The openapi-fetch client underneath (exact request bodies and the session are applied; its
   * answers are openapi-fetch's, read with plain JSON.parse): for calls outside the document.
   */
  readonly raw: Client<Paths<P>>;
}

const BIGINT_KEYS: Record<Profile, ReadonlySet<string>> = { a: new Set(bigintA), b: new Set(bigintB) };

function retryAfter(headers: Headers): number | undefined {
  const value = headers.get('retry-after');
  return value !== null && /^[0-9]+$/.test(value) ? Number(value) : undefined;
}

export function createUsherClient<P extends Profile>(options: UsherClientOptions<P>): UsherClient<P> {
  const mode = options.session ?? 'cookie';
  const bigintKeys = BIGINT_KEYS[options.profile];
  let token = mode === 'token' ? options.token : undefined;
  const query = createQuerySerializer();

  const clientOptions: ClientOptions = {
    baseUrl: options.baseUrl ?? '',
    // Cookie mode sends the session cookie cross-origin too (Usher must allow the origin with
    // credentials); token mode sends none, so the token alone says who is calling.
    credentials: mode === 'cookie' ? 'include' : 'omit',
    bodySerializer: stringifyJson,
    // A number id past 2^53 has already been rounded by the time it gets here: refuse it.
    pathSerializer: (path, params) => {
      for (const [key, value] of Object.entries(params)) checkSafe(key, value);
      return defaultPathSerializer(path, params);
    },
    querySerializer: (params: Record<string, unknown>) => {
      for (const [key, value] of Object.entries(params)) checkSafe(key, value);
      return query(params);
    },
  };
  if (options.fetch) clientOptions.fetch = options.fetch;
  const raw = createClient<Paths<P>>(clientOptions);
  raw.use({
    onRequest({ request }) {
      if (token !== undefined && !request.headers.has('authorization')) {
        request.headers.set('authorization', `Bearer ${token}`);
      }
      return request;
    },
  });

  /** Turns openapi-fetch's answer (read as text) into a Result. */
  function toResult(response: Response, data: unknown, error: unknown): Result<unknown, string> {
    if (response.ok) {
      const text = typeof data === 'string' ? data : '';
      const json = /^application\/json\b/i.test(response.headers.get('content-type') ?? '');
      const body = text === '' ? undefined : json ? parseJson(text, bigintKeys) : text;
      const page = readPage(response.headers);
      return { ok: true, status: response.status, data: body, response, ...(page ? { page } : {}) };
    }
    const code = (error as { error?: unknown } | undefined)?.error;
    if (typeof code !== 'string') {
      throw new UnexpectedResponseError(response, `not an Usher error body: ${String(error).slice(0, 200)}`);
    }
    const message = (error as { message?: unknown }).message;
    const wait = retryAfter(response.headers);
    const factor = response.headers.get('usher-second-factor');
    const ticket = response.headers.get('usher-second-factor-ticket');
    return {
      ok: false,
      status: response.status,
      error: code,
      response,
      ...(typeof message === 'string' ? { message } : {}),
      ...(wait === undefined ? {} : { retryAfter: wait }),
      ...(factor === null ? {} : { secondFactor: factor }),
      ...(ticket === null ? {} : { ticket }),
    };
  }

  const method =
    (name: 'GET' | 'POST' | 'PUT' | 'DELETE') =>
    async (url: string, init: Record<string, unknown> = {}): Promise<Result<unknown, string>> => {
      // Read as text: openapi-fetch would JSON.parse it and round the ids.
      const { data, error, response } = await raw.request(
        name.toLowerCase() as HttpMethod,
        url as never,
        {
          ...init,
          parseAs: 'text',
        } as never,
      );
      return toResult(response, data, error);
    };
  const call = {
    GET: method('GET'),
    POST: method('POST'),
    PUT: method('PUT'),
    DELETE: method('DELETE'),
  };

  async function signIn(credentials: Credentials): Promise<Result<unknown, string>> {
    const body = { email: credentials.email, password: credentials.password, ...pickCode(credentials) };
    if (mode === 'cookie') {
      const result = await call.POST('/api/signin', { body });
      return result.ok ? { ...result, data: signedInUser(result.data) } : result;
    }
    const result = await call.POST('/api/sessions', { body });
    if (!result.ok) return result;
    const created = result.data as { token: string; user: unknown };
    token = created.token;
    return { ...result, data: created.user };
  }

  /** Profile A answers the user itself; profile B wraps it as {"user": …}. */
  const signedInUser = (data: unknown) => (options.profile === 'a' ? data : (data as { user: unknown }).user);

  async function finishSignIn(ticket: string, code: string): Promise<Result<unknown, string>> {
    const result = await call.POST('/api/signin/second-factor', { body: { ticket, code } });
    if (!result.ok) return result;
    if (mode === 'token') token = sessionCookie(result.response) ?? token;
    return { ...result, data: signedInUser(result.data) };
  }

  function askSignInMail(
    email: string,
    ask: { via?: 'link' | 'code'; redirectTo?: string } = {},
  ): Promise<Result<unknown, string>> {
    if (ask.via === 'code') return call.POST('/api/signin/email-code', { body: { email } });
    const body = { email, ...(ask.redirectTo === undefined ? {} : { redirectTo: ask.redirectTo }) };
    return call.POST('/api/signin/email-link', { body });
  }

  async function signInWithMail(proof: MailProof): Promise<Result<unknown, string>> {
    const result =
      'token' in proof
        ? await call.POST('/api/signin/email-link/verify', { body: { token: proof.token } })
        : await call.POST('/api/signin/email-code/verify', {
            body: { email: proof.email, code: proof.code },
          });
    if (!result.ok) return result;
    // The session rides in the cookie; outside a browser it is read back as the Bearer token.
    if (mode === 'token') token = sessionCookie(result.response) ?? token;
    return { ...result, data: signedInUser(result.data) };
  }

  async function signInWithIdToken(input: IdTokenSignIn): Promise<Result<unknown, string>> {
    const body = {
      provider: input.provider,
      idToken: input.idToken,
      ...(input.nonce === undefined ? {} : { nonce: input.nonce }),
      ...(input.code === undefined ? {} : { code: input.code }),
    };
    const result = await call.POST('/api/sessions/oauth', { body });
    if (!result.ok) return result;
    const created = result.data as { token: string; user: unknown };
    token = created.token;
    return { ...result, data: created.user };
  }

  function providerSignInUrl(
    provider: string,
    start: { redirectTo?: string; intent?: 'signin' | 'link' } = {},
  ) {
    const params = new URLSearchParams();
    if (start.redirectTo !== undefined) params.set('redirectTo', start.redirectTo);
    if (start.intent !== undefined) params.set('intent', start.intent);
    const search = params.size > 0 ? `?${params}` : '';
    return `${options.baseUrl ?? ''}/api/oauth/${encodeURIComponent(provider)}/start${search}`;
  }

  function readProviderLanding(url: string | URL): ProviderLanding {
    const address = new URL(url, 'http://landing.invalid');
    const error = address.searchParams.get('error');
    const ticket = new URLSearchParams(address.hash.slice(1)).get('second-factor');
    return { ...(error === null ? {} : { error }), ...(ticket === null ? {} : { ticket }) };
  }

  async function signOut(): Promise<Result<unknown, string>> {
    try {
      return await call.POST('/api/signout');
    } finally {
      token = undefined;
    }
  }

  return {
    profile: options.profile,
    session: mode,
    get token() {
      return token;
    },
    ...(call as Pick<UsherClient<P>, 'GET' | 'POST' | 'PUT' | 'DELETE'>),
    signIn: signIn as UsherClient<P>['signIn'],
    whoAmI: (() => call.GET('/api/session')) as UsherClient<P>['whoAmI'],
    accessToken: ((audience: string) =>
      call.POST('/api/session/token', { body: { audience } })) as UsherClient<P>['accessToken'],
    providerSignInUrl,
    readProviderLanding,
    finishSignIn: finishSignIn as UsherClient<P>['finishSignIn'],
    askSignInMail: askSignInMail as UsherClient<P>['askSignInMail'],
    signInWithMail: signInWithMail as UsherClient<P>['signInWithMail'],
    signInWithIdToken: signInWithIdToken as UsherClient<P>['signInWithIdToken'],
    signOut: signOut as UsherClient<P>['signOut'],
    raw,
  };
}

/** The session token in an answer's `usher_session` cookie (readable outside browsers only). */
function sessionCookie(response: Response): string | undefined {
  for (const cookie of response.headers.getSetCookie?.() ?? []) {
    const match = /^usher_session=([^;]+)/.exec(cookie);
    if (match) return decodeURIComponent(match[1]!);
  }
  return undefined;
}

function pickCode(credentials: Credentials): { code?: string } {
  return credentials.code === undefined ? {} : { code: credentials.code };
}
