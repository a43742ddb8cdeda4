// One audit for every way of signing in (password, with or without a second factor, passkey): one
// metric and one log line per attempt, however it ended (judged, throttled, unreadable, the
// database down), written once it has been answered.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Metrics, SigninMethodLabel, SigninOutcomeLabel } from '../plugins/metrics.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The account a sign-in attempt was about, when it has one: for the audit line. */
    signinUserId: bigint | null;
    /** How a successful sign-in proved itself: for the audit line and the metric. */
    signinMethod: SigninMethodLabel | null;
  }
}

/** The audit label of a sign-in attempt, from how it was answered. */
function outcomeOf(statusCode: number): SigninOutcomeLabel {
  if (statusCode === 200 || statusCode === 201) return 'success';
  if (statusCode === 401) return 'failure';
  if (statusCode === 429) return 'throttled';
  if (statusCode === 403) return 'unverified';
  return statusCode >= 500 ? 'unavailable' : 'invalid';
}

/** The onResponse hook of a sign-in route; its plugin decorates the two request fields it reads. */
export function signinAudit(metrics: Pick<Metrics, 'signin' | 'signedIn'>) {
  return (request: FastifyRequest, reply: FastifyReply, done: () => void): void => {
    const outcome = outcomeOf(reply.statusCode);
    metrics.signin(outcome);
    const method = outcome === 'success' ? (request.signinMethod ?? undefined) : undefined;
    if (method) metrics.signedIn(method);
    request.log.info(
      {
        event: 'signin',
        outcome,
        method,
        status: reply.statusCode,
        userId: request.signinUserId === null ? undefined : String(request.signinUserId),
        address: request.ip,
      },
      'sign-in attempt',
    );
    done();
  };
}
