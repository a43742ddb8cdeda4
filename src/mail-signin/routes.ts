import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { safeRedirect } from '../kernel/redirects.ts';
import { signinFailureResponses, type WireProfile } from '../profiles/index.ts';
import { AcceptedComponent } from '../recovery/index.ts';
import type { Authenticator } from '../sessions/guard.ts';
import { AppError } from '../shared/errors.ts';
import { BODY_ERRORS, failures, success } from '../shared/schemas.ts';
import type { SigninCore } from '../signin/core.ts';
import type { SigninObservers } from '../signin/feature.ts';
import { SECOND_FACTOR_HEADER, signinAnswers, signinMessage } from '../signin/index.ts';
import { CODE_MAX_FAILURES, type MailSigninResult, type MailSigninService } from './service.ts';

export interface MailSigninRoutesOptions {
  mailSignin: MailSigninService;
  core: SigninCore;
  guard: Authenticator;
  profile: WireProfile;
  metrics: SigninObservers;
  redirects: { publicUrl: string; corsOrigins: readonly string[] };
  /** The asking client's language, for the mail to an email with no account yet. */
  localeOf(acceptLanguage: string | undefined): string | undefined;
}

const TICKET_HEADER = 'usher-second-factor-ticket';
const REDIRECT_HEADER = 'usher-redirect-to';
const DEFAULT_REDIRECT = '/account';

const Accepted = AcceptedComponent.ref;
const email = Type.String({ maxLength: 1024, description: 'The email to sign in with.' });
const ASK_NOTES = {
  TOO_MANY_REQUESTS:
    'Too many asks from this client address (PASSWORD_RESET_MAX_PER_ADDRESS per 15 minutes).',
};

const LINK_MESSAGES = {
  400: 'The request body must be a JSON object with the token from the link in the string field token.',
  401: 'This sign-in link is unknown, was already used, or has expired; ask for a new one.',
};
const CODE_MESSAGES = {
  400: 'The request body must be a JSON object with string fields email and code.',
  401: 'The email or the code is not right, or the code has expired; ask for a new one if it has.',
};

/**
 * Sign-in by a link or a code in a mail (CONTRACT "Sign-in by mail, languages, and users from
 * other systems"). The asks answer 202 alike for every email; the verify routes answer exactly as
 * POST /api/signin, except that an account with TOTP in force gets its ticket in a header (the
 * body has no field for a code): POST /api/signin/second-factor finishes it.
 */
export const mailSigninRoutes: FastifyPluginAsyncTypebox<MailSigninRoutesOptions> = async (app, options) => {
  const { mailSignin, core, guard, profile, metrics } = options;

  app.post(
    '/api/signin/email-link',
    {
      schema: {
        summary: 'Ask for a sign-in link by mail',
        operationId: 'askSigninLink',
        description:
          'Always 202 for a well-formed request, whether or not the email has an account, in about the same time. ' +
          'For an account, a link to {PUBLIC_URL}/signin/email-link#token=… is mailed: it signs in once, within 15 ' +
          'minutes, and verifies the email. For an email with no account nothing is sent, unless ' +
          'EMAIL_SIGNIN_CREATES_ACCOUNTS=true (then the link creates the account). At most ' +
          'PASSWORD_RESET_MAX_PER_ACCOUNT sign-in mails per email per 15 minutes (further asks answer 202 and send nothing).',
        body: Type.Object(
          {
            email,
            redirectTo: Type.Optional(
              Type.String({
                maxLength: 2048,
                description:
                  'Where the link page sends the browser once signed in: a path on PUBLIC_URL or a URL on an origin of CORS_ORIGINS. Default `/account`.',
              }),
            ),
          },
          { additionalProperties: false },
        ),
        response: {
          202: success(Accepted, 'Accepted; a mail follows if the email has an account.'),
          ...failures(['TOO_MANY_REQUESTS', ...BODY_ERRORS], { notes: ASK_NOTES }),
        },
      },
      config: { noStore: true },
    },
    async (request, reply) => {
      const target = safeRedirect(request.body.redirectTo ?? DEFAULT_REDIRECT, options.redirects);
      if (target === undefined)
        throw new AppError(
          'VALIDATION_FAILED',
          'redirectTo: must be a path on PUBLIC_URL or a URL on an origin of CORS_ORIGINS',
        );
      await mailSignin.askLink(
        request.body.email,
        request.ip,
        target,
        options.localeOf(request.headers['accept-language']),
      );
      return reply.code(202).send({ status: 'accepted' as const });
    },
  );

  app.post(
    '/api/signin/email-code',
    {
      schema: {
        summary: 'Ask for a sign-in code by mail',
        operationId: 'askSigninCode',
        description:
          'Always 202 for a well-formed request, whether or not the email has an account, in about the same time. ' +
          `For an account, a 6-digit code is mailed: it signs in once, within 10 minutes, and dies with ${CODE_MAX_FAILURES} ` +
          'wrong tries. For an email with no account nothing is sent, unless EMAIL_SIGNIN_CREATES_ACCOUNTS=true. ' +
          'The same limits as the sign-in link.',
        body: Type.Object({ email }, { additionalProperties: false }),
        response: {
          202: success(Accepted, 'Accepted; a mail follows if the email has an account.'),
          ...failures(['TOO_MANY_REQUESTS', ...BODY_ERRORS], { notes: ASK_NOTES }),
        },
      },
      config: { noStore: true },
    },
    async (request, reply) => {
      await mailSignin.askCode(
        request.body.email,
        request.ip,
        options.localeOf(request.headers['accept-language']),
      );
      return reply.code(202).send({ status: 'accepted' as const });
    },
  );

  const responses = (notes: { 400: string; 401: string }) => ({
    200: success(
      profile.signinSuccessSchema,
      'Signed in; the session cookie is set.',
      'Set-Cookie',
      'Usher-Redirect-To',
    ),
    ...signinFailureResponses(
      profile.name === 'a',
      {
        SIGNIN_FAILED: {
          ...notes,
          401:
            `${notes[401]} With \`Usher-Second-Factor: totp\` and \`Usher-Second-Factor-Ticket\` when the account ` +
            'has TOTP in force: POST /api/signin/second-factor with that ticket and a code finishes the sign-in.',
          403: 'An admin disabled the account (the link or code was right).',
          429: 'Too many failed sign-ins from this address (or, for a code, for this account); try again after Retry-After seconds.',
        },
      },
      ['Usher-Second-Factor-Ticket', 'Usher-Redirect-To'],
    ),
  });

  /** The answers of POST /api/signin, and the link's redirect and a ticket in headers. */
  const answer = (
    answers: ReturnType<typeof signinAnswers>,
    request: Parameters<ReturnType<typeof signinAnswers>['settle']>[0],
    reply: FastifyReply,
    { outcome, redirectTo }: MailSigninResult,
    messages: { 400: string; 401: string },
  ) => {
    if (redirectTo !== undefined) reply.header(REDIRECT_HEADER, redirectTo);
    const settled = answers.settleOrTicket(request, outcome);
    if ('ticket' in settled)
      throw new AppError(
        'SIGNIN_FAILED',
        signinMessage(messages, 401, { [SECOND_FACTOR_HEADER]: 'totp' }),
        401,
        {
          [SECOND_FACTOR_HEADER]: 'totp',
          [TICKET_HEADER]: settled.ticket,
        },
      );
    return answers.withCookie(request, reply, settled);
  };

  // Each verify route in a scope of its own: its answers (audit, metric) are its method's.
  const scoped = (plugin: FastifyPluginAsyncTypebox) => app.register(plugin);
  await scoped(async (scope) => {
    const answers = signinAnswers(scope, {
      method: 'email_link',
      messages: LINK_MESSAGES,
      profile,
      guard,
      metrics,
      deviceTtlSeconds: core.deviceTtlSeconds,
    });
    scope.post(
      '/api/signin/email-link/verify',
      {
        onRequest: answers.hooks.watchHangUp,
        onResponse: answers.hooks.onResponse,
        schema: {
          summary: 'Sign in with the token from a sign-in link',
          operationId: 'signInWithLink',
          description:
            "The answers of POST /api/signin: the session cookie and the profile's success body, with the link's " +
            '`redirectTo` in `Usher-Redirect-To`. Using the link verifies the email. A bad, used or expired token: ' +
            "401 SIGNIN_FAILED. Usher's page {PUBLIC_URL}/signin/email-link calls this for the link in the mail.",
          body: Type.Object(
            {
              token: Type.String({
                maxLength: 128,
                description: 'The token from the link in the mail (the part after #token=).',
                writeOnly: true,
              }),
            },
            { additionalProperties: true },
          ),
          response: responses(LINK_MESSAGES),
        },
        config: { renderError: answers.renderError, noStore: true },
      },
      async (request, reply) => {
        const result = await mailSignin.signInWithLink(request.body.token, {
          address: request.ip,
          deviceToken: guard.deviceToken(request),
          userAgent: request.headers['user-agent'],
        });
        return answer(answers, request, reply, result, LINK_MESSAGES);
      },
    );
  });

  await scoped(async (scope) => {
    const answers = signinAnswers(scope, {
      method: 'email_code',
      messages: CODE_MESSAGES,
      profile,
      guard,
      metrics,
      deviceTtlSeconds: core.deviceTtlSeconds,
    });
    scope.post(
      '/api/signin/email-code/verify',
      {
        onRequest: answers.hooks.watchHangUp,
        onResponse: answers.hooks.onResponse,
        schema: {
          summary: 'Sign in with the code from a mail',
          operationId: 'signInWithCode',
          description:
            "The answers of POST /api/signin: the session cookie and the profile's success body. Using the code " +
            `verifies the email. A wrong, used or expired code: 401 SIGNIN_FAILED; the ${CODE_MAX_FAILURES}th wrong ` +
            "try voids the email's codes, and wrong codes count in the sign-in throttle like wrong passwords.",
          body: Type.Object(
            {
              email: Type.String({ maxLength: 1024, description: 'The email the code was mailed to.' }),
              code: Type.String({
                maxLength: 64,
                description: 'The 6-digit code from the mail (spaces and hyphens are ignored).',
                writeOnly: true,
              }),
            },
            { additionalProperties: true },
          ),
          response: responses(CODE_MESSAGES),
        },
        config: { renderError: answers.renderError, noStore: true },
      },
      async (request, reply) => {
        const result = await mailSignin.signInWithCode(request.body.email, request.body.code, {
          address: request.ip,
          deviceToken: guard.deviceToken(request),
          userAgent: request.headers['user-agent'],
        });
        return answer(answers, request, reply, result, CODE_MESSAGES);
      },
    );
  });
};
