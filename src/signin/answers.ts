// The route half of the sign-in core: what every sign-in route answers, once for all methods:
// the audit line and metric, the failure as SIGNIN_FAILED in the profile's shape with one message
// per kind of failure, and the success as the session cookie with the profile's body or as a token.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorRenderer } from '../plugins/errors.ts';
import type { WireProfile } from '../profiles/index.ts';
import { type Authenticator, DEVICE_HEADER, sessionBody } from '../sessions/index.ts';
import { AppError } from '../shared/errors.ts';
import { decorateSigninRequests, type SigninAudit, signinAudit } from './audit.ts';
import type { RedeemOutcome, SigninMethodName, SigninOutcome } from './core.ts';
import type { SigninObservers } from './metrics.ts';

/** Names the factor a sign-in still needs; only sent once the method succeeded. */
export const SECOND_FACTOR_HEADER = 'usher-second-factor';
const SECOND_FACTOR_MESSAGE =
  'A code is needed: send a current code from your authenticator app, or a recovery code, in `code`.';

/** What a method says itself: its bad body (400) and its wrong credentials (401). */
export interface MethodMessages {
  400: string;
  401: string;
}

export type SigninSuccess = Extract<SigninOutcome, { ok: true }>;

export interface SigninAnswers {
  /** The route's onRequest and onResponse hooks (the audit of what was not judged). */
  readonly hooks: Pick<SigninAudit, 'watchHangUp' | 'onResponse'>;
  /**
   * Records an attempt as if answered with `statusCode`, for routes that answer otherwise (a
   * redirect): once per request.
   */
  readonly record: SigninAudit['record'];
  /** Failures as the profile's SIGNIN_FAILED body (the documented routes). */
  readonly renderError: ErrorRenderer;
  /** Failures as `{error: "SIGNIN_FAILED", message}` in both profiles (undocumented routes). */
  readonly renderErrorWithMessage: ErrorRenderer;
  /**
   * Records a judged outcome (now, whether or not the client stays for the answer), then
   * returns the success or throws the failure for the route's renderer.
   */
  settle(request: FastifyRequest, outcome: RedeemOutcome, successStatus: 200 | 201): SigninSuccess;
  /**
   * For methods with no body to carry a code: the ticket of a sign-in that still needs one
   * (recorded as a password sign-in without its code is), else as `settle`.
   */
  settleOrTicket(request: FastifyRequest, outcome: SigninOutcome): SigninSuccess | { ticket: string };
  /** The browser's answer: the session and device cookies, and the profile's success body. */
  withCookie(request: FastifyRequest, reply: FastifyReply, success: SigninSuccess): object;
  /** The answer for clients without cookies: the token, the session and the user. */
  withToken(
    reply: FastifyReply,
    success: SigninSuccess,
  ): { token: string; session: ReturnType<typeof sessionBody>; user: unknown };
}

const UNVERIFIED_MESSAGE = 'Confirm your email address first: follow the link in the mail we sent you.';
/** Only ever said to who proved the account's credential (CONTRACT "Administration"). */
export const DISABLED_MESSAGE = 'This account is disabled; contact the service to have it enabled again.';

/**
 * One message per kind of failure; none of them says whether the account exists. The two 403s
 * (unverified, disabled) come only after a right credential; `thrown` is the message they were
 * raised with, which tells them apart.
 */
export function signinMessage(
  messages: MethodMessages,
  statusCode: number,
  headers: Readonly<Record<string, string>> = {},
  thrown?: string,
): string {
  if (headers[SECOND_FACTOR_HEADER] !== undefined) return SECOND_FACTOR_MESSAGE;
  if (statusCode === 401) return messages[401];
  if (statusCode === 429) return 'Too many sign-in attempts; try again later.';
  if (statusCode === 403) return thrown === DISABLED_MESSAGE ? DISABLED_MESSAGE : UNVERIFIED_MESSAGE;
  if (statusCode === 413) return 'The request body is larger than a sign-in needs.';
  if (statusCode === 415) return 'The request body must be JSON (Content-Type: application/json).';
  if (statusCode >= 500) return 'Sign-in is unavailable right now; try again later.';
  return messages[400];
}

/** The status a sign-in refusal is answered with, whichever method was refused. */
export function signinFailureStatus(
  reason: Extract<SigninOutcome, { ok: false }>['reason'],
): 401 | 403 | 429 {
  if (reason === 'throttled') return 429;
  if (reason === 'unverified' || reason === 'disabled') return 403;
  return 401;
}

/** The answers of one sign-in route plugin, for `method`'s attempts. */
export function signinAnswers(
  app: FastifyInstance,
  options: {
    method: SigninMethodName;
    messages: MethodMessages;
    profile: WireProfile;
    guard: Authenticator;
    metrics: SigninObservers;
    /** The device cookie's Max-Age (SigninCore.deviceTtlSeconds). */
    deviceTtlSeconds: number;
  },
): SigninAnswers {
  const { profile, guard, messages } = options;
  decorateSigninRequests(app);
  const audit = signinAudit(options.metrics, options.method);
  const message = (status: number, headers?: Readonly<Record<string, string>>, thrown?: string) =>
    signinMessage(messages, status, headers, thrown);
  return {
    hooks: { watchHangUp: audit.watchHangUp, onResponse: audit.onResponse },
    record: audit.record,
    renderError: (f) => ({
      statusCode: f.statusCode,
      body: profile.signinFailure(message(f.statusCode, f.headers, f.message)),
    }),
    renderErrorWithMessage: (f) => ({
      statusCode: f.statusCode,
      body: { error: 'SIGNIN_FAILED', message: message(f.statusCode, f.headers, f.message) },
    }),
    settle(request, outcome, successStatus) {
      if (outcome.ok) {
        request.signinUserId = outcome.user.id;
        request.signinMethod = outcome.method;
        request.signinFactor = outcome.factor ?? null;
      } else {
        if (outcome.reason !== 'throttled') request.signinUserId = outcome.userId ?? null;
        request.signinDisabled = outcome.reason === 'disabled';
        // A ticket's failure, once the ticket was read, is the method's that left it.
        if ('method' in outcome) request.signinMethod = outcome.method;
      }
      audit.record(request, outcome.ok ? successStatus : signinFailureStatus(outcome.reason));
      if (outcome.ok) return outcome;
      const status = signinFailureStatus(outcome.reason);
      if (outcome.reason === 'throttled')
        throw new AppError('SIGNIN_FAILED', message(429), 429, {
          'retry-after': String(outcome.retryAfterSeconds),
        });
      if (outcome.reason === 'second-factor')
        throw new AppError('SIGNIN_FAILED', SECOND_FACTOR_MESSAGE, 401, { [SECOND_FACTOR_HEADER]: 'totp' });
      if (outcome.reason === 'disabled') throw new AppError('SIGNIN_FAILED', DISABLED_MESSAGE, 403);
      throw new AppError('SIGNIN_FAILED', message(status), status);
    },
    settleOrTicket(request, outcome) {
      if (outcome.ok || outcome.reason !== 'second-factor' || outcome.ticket === undefined)
        return this.settle(request, outcome, 200);
      request.signinUserId = outcome.userId;
      audit.record(request, 401);
      return { ticket: outcome.ticket };
    },
    withCookie(request, reply, { user, started, deviceToken }) {
      // The documented body is unchanged; the session rides in the cookie (or is read back as a
      // Bearer token by clients that cannot keep cookies).
      guard.setCookie(request, reply, started.token);
      if (deviceToken) guard.setDeviceCookie(request, reply, deviceToken, options.deviceTtlSeconds);
      return profile.signinSuccess(user);
    },
    withToken(reply, { user, started, deviceToken }) {
      // No cookie here: the client keeps the device token and sends it back in the same header.
      if (deviceToken) reply.header(DEVICE_HEADER, deviceToken);
      reply.code(201);
      return { token: started.token, session: sessionBody(started.session), user: profile.user(user) };
    },
  };
}
