// An example sign-in method, for tests only: the whole of what a new method is. It proves who is
// there (here: an HMAC of the email under a key the test holds, standing in for a provider's
// answer or a mail link) and hands the rest to the sign-in core. Like a provider or a mail link
// it has no body to carry a TOTP code, so an account with TOTP in force gets a ticket.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { Type } from 'typebox';
import { type FeatureContext, feature } from '../../../src/feature.ts';
import { signinFailureResponses } from '../../../src/profiles/index.ts';
import { success } from '../../../src/shared/schemas.ts';
import { signinAnswers } from '../../../src/signin/answers.ts';
import type { SigninExports } from '../../../src/signin/feature.ts';
import type { UsersExports } from '../../../src/users/feature.ts';
import { emailKey } from '../../../src/users/user.ts';

export const exampleWord = (key: Buffer, email: string) =>
  createHmac('sha256', key).update(emailKey(email)).digest('base64url');

/** What the method uses of the features built before it: the sign-in core, and the users to find. */
type Needs = { signin: SigninExports; users: UsersExports };

export function exampleMethod(key: Buffer) {
  return feature({
    name: 'example-method',
    routes: (app, { needs, guard, profile }: FeatureContext<unknown, Needs>) =>
      app.register(async (scope) => {
        const answers = signinAnswers(scope, {
          method: 'example',
          messages: { 400: 'Send email and word.', 401: 'That word does not open this account.' },
          profile,
          guard,
          metrics: needs.signin.metrics,
          deviceTtlSeconds: needs.signin.core.deviceTtlSeconds,
        });
        scope.post(
          '/api/signin/example',
          {
            onRequest: answers.hooks.watchHangUp,
            onResponse: answers.hooks.onResponse,
            schema: {
              summary: 'Sign in with the example method (tests only)',
              operationId: 'signInExample',
              description: 'An HMAC of the email stands in for a provider or a mail link.',
              body: Type.Object(
                { email: Type.String({ maxLength: 320 }), word: Type.String({ maxLength: 64 }) },
                { additionalProperties: false },
              ),
              response: {
                200: success(profile.signinSuccessSchema, 'Signed in; the session cookie is set.'),
                ...signinFailureResponses(profile.name === 'a'),
              },
            },
            config: { renderError: answers.renderError, noStore: true },
          },
          async (request, reply) => {
            const { email, word } = request.body as { email: string; word: string };
            const outcome = await needs.signin.core.run(
              {
                name: 'example',
                throttle: { account: emailKey(email) },
                prove: async () => {
                  const user = await needs.users.users.findByEmail(email).catch(() => undefined);
                  const expected = Buffer.from(exampleWord(key, email));
                  const given = Buffer.from(word);
                  const right = given.length === expected.length && timingSafeEqual(given, expected);
                  if (!user || !right) return { ok: false, userId: user?.id };
                  return { ok: true, user, secondFactor: { by: 'ticket' } };
                },
              },
              {
                address: request.ip,
                deviceToken: guard.deviceToken(request),
                userAgent: request.headers['user-agent'],
              },
            );
            const settled = answers.settleOrTicket(request, outcome);
            // No body for a code: the browser goes on with the ticket in the fragment (never logged).
            if ('ticket' in settled) return reply.redirect(`/signed-in#second-factor=${settled.ticket}`, 303);
            return answers.withCookie(request, reply, settled);
          },
        );
      }),
  });
}
