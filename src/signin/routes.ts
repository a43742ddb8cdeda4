import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { signinFailureResponses, type WireProfile } from '../profiles/index.ts';
import type { Authenticator } from '../sessions/guard.ts';
import { success } from '../shared/schemas.ts';
import { signinAnswers } from './answers.ts';
import { type SigninCore, TICKET_MAX_FAILURES } from './core.ts';
import type { SigninObservers } from './metrics.ts';

export interface SigninRoutesOptions {
  core: SigninCore;
  guard: Authenticator;
  profile: WireProfile;
  metrics: SigninObservers;
}

const MESSAGES = {
  400: 'The request body must be a JSON object with string fields ticket and code.',
  401: 'The ticket or the code is not right: sign in again if the ticket has expired.',
};

// Unused fields are ignored, as on POST /api/signin; a field that is there must be a string.
const SecondFactorBody = Type.Object(
  {
    ticket: Type.Optional(
      Type.String({
        maxLength: 64,
        description: 'The ticket from `#second-factor=…` in the address the sign-in sent the browser to.',
        writeOnly: true,
      }),
    ),
    code: Type.Optional(
      Type.String({
        maxLength: 64,
        description: 'A current 6-digit TOTP code or one unused recovery code.',
        writeOnly: true,
      }),
    ),
  },
  { additionalProperties: true },
);

/** The core's own route: the second step of a sign-in whose method had no body for a code. */
export const signinRoutes: FastifyPluginAsyncTypebox<SigninRoutesOptions> = async (
  app,
  { core, guard, profile, metrics },
) => {
  // The method is the ticket's (request.signinMethod once it is read); this is the label until then.
  const answers = signinAnswers(app, {
    method: 'second_factor',
    messages: MESSAGES,
    profile,
    guard,
    metrics,
    deviceTtlSeconds: core.deviceTtlSeconds,
  });
  app.post(
    '/api/signin/second-factor',
    {
      onRequest: answers.hooks.watchHangUp,
      onResponse: answers.hooks.onResponse,
      schema: {
        summary: 'Finish a sign-in that needs a second factor, with its ticket and a code',
        operationId: 'signInSecondFactor',
        description:
          'For sign-in methods with no body to carry a code (a provider, a mail link): when the account has ' +
          'TOTP in force they send the browser to its `redirectTo` with `#second-factor=<ticket>` instead of ' +
          'starting a session. This finishes it with the answers of POST /api/signin (the session cookie and ' +
          `the profile's success body). A ticket is single-use, lives 5 minutes and dies with ${TICKET_MAX_FAILURES} ` +
          "wrong codes; wrong codes also count in the account's code delay and the address's sign-in throttle.",
        body: SecondFactorBody,
        response: {
          200: success(profile.signinSuccessSchema, 'Signed in; the session cookie is set.', 'Set-Cookie'),
          ...signinFailureResponses(profile.name === 'a', {
            SIGNIN_FAILED: {
              400: 'The body is not a JSON object with string fields.',
              401: 'An unknown, used, expired or dead ticket, or a wrong or missing code (then with `Usher-Second-Factor: totp` while the ticket lives).',
              429: 'Too many failed sign-ins from this address, or wrong codes for this account; try again after Retry-After seconds.',
            },
          }),
        },
      },
      config: { renderError: answers.renderError, noStore: true },
    },
    async (request, reply) => {
      const { ticket = '', code } = request.body;
      const outcome = await core.redeem(ticket, code, {
        address: request.ip,
        userAgent: request.headers['user-agent'],
      });
      return answers.withCookie(request, reply, answers.settle(request, outcome, 200));
    },
  );
};
