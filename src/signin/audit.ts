// One audit for every way of signing in (password, with or without a second factor, passkey): one
// metric and one log line per attempt, however it ended (judged, throttled, unreadable, the
// database down). A judged attempt is recorded the moment it is judged, so a client that hangs up
// before its answer still leaves its trace; whatever never reached a verdict is recorded once it
// has been answered.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { SigninOutcomeLabel } from '../plugins/metrics.ts';
import type { SecondFactorKind, SigninMethodName } from './core.ts';
import type { SigninObservers } from './metrics.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The account a sign-in attempt was about, when it has one: for the audit line. */
    signinUserId: bigint | null;
    /** The method, when the route learns it only as it runs (a ticket's): for the audit and metric. */
    signinMethod: SigninMethodName | null;
    /** The second factor a successful sign-in also used: for the audit line and the metric. */
    signinFactor: SecondFactorKind | null;
    /** Set once the attempt was recorded, so that the response hook does not record it again. */
    signinAudited: boolean;
    /** The account was disabled: a 403 that is not about an unverified email. */
    signinDisabled: boolean;
  }
}

/** The audit label of a sign-in attempt, from how it was answered (`disabled` is told by the route). */
function outcomeOf(statusCode: number): SigninOutcomeLabel {
  if (statusCode === 200 || statusCode === 201) return 'success';
  if (statusCode === 401) return 'failure';
  if (statusCode === 429) return 'throttled';
  if (statusCode === 403) return 'unverified';
  return statusCode >= 500 ? 'unavailable' : 'invalid';
}

/** What a sign-in route's plugin decorates requests with, for the audit to read. */
export function decorateSigninRequests(app: { decorateRequest(name: string, value: unknown): unknown }) {
  app.decorateRequest('signinUserId', null);
  app.decorateRequest('signinMethod', null);
  app.decorateRequest('signinFactor', null);
  app.decorateRequest('signinAudited', false);
  app.decorateRequest('signinDisabled', false);
}

export interface SigninAudit {
  /** Records the attempt as answered (or about to be) with `statusCode`; once per request. */
  record(request: FastifyRequest, statusCode: number): void;
  /** The onResponse hook of a sign-in route: records what was not recorded when judged. */
  onResponse(request: FastifyRequest, reply: FastifyReply, done: () => void): void;
  /**
   * An onRequest hook of a sign-in route. A response that never finishes writing (the client
   * hung up) runs no onResponse hook, so the access log would have no line for it: this one
   * stands in, with nginx's 499 for "client closed the request". (Fastify's onRequestAbort only
   * fires while the request body is still arriving.)
   */
  watchHangUp(request: FastifyRequest, reply: FastifyReply, done: () => void): void;
}

/** The audit of one sign-in route, whose attempts are by `method` unless the request says otherwise. */
export function signinAudit(metrics: SigninObservers, method: SigninMethodName): SigninAudit {
  const record = (request: FastifyRequest, statusCode: number): void => {
    if (request.signinAudited) return;
    request.signinAudited = true;
    const outcome = request.signinDisabled ? 'disabled' : outcomeOf(statusCode);
    const by = request.signinMethod ?? method;
    const factor = outcome === 'success' ? (request.signinFactor ?? undefined) : undefined;
    metrics.signin(outcome, by, factor);
    request.log.info(
      {
        event: 'signin',
        outcome,
        method: by,
        factor,
        status: statusCode,
        userId: request.signinUserId === null ? undefined : String(request.signinUserId),
        address: request.ip,
      },
      'sign-in attempt',
    );
  };
  return {
    record,
    onResponse: (request, reply, done) => {
      record(request, reply.statusCode);
      done();
    },
    watchHangUp: (request, reply, done) => {
      const hungUp = () => {
        if (reply.raw.writableFinished) return;
        request.log.info(
          { method: request.method, url: request.url.split('?')[0], statusCode: 499, address: request.ip },
          'request closed by the client before its answer',
        );
      };
      // Gone already (its 'close' has passed): the attempt is still judged, and answered to no one.
      if (request.raw.socket?.destroyed) hungUp();
      else reply.raw.once('close', hungUp);
      done();
    },
  };
}
