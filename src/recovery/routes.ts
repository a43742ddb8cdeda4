import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { PASSWORD_INPUT_MAX, PASSWORD_MAX } from '../passwords/index.ts';
import { type Authenticator, currentSession } from '../sessions/index.ts';
import { BODY_ERRORS, component, failures, noContent, success } from '../shared/schemas.ts';
import type { RecoveryService } from './service.ts';

export const AcceptedComponent = component(
  'Accepted',
  Type.Object(
    { status: Type.Literal('accepted') },
    { additionalProperties: false, description: 'Accepted: whatever follows happens by mail.' },
  ),
);
const Accepted = AcceptedComponent.ref;
const TOKEN_NOTES = { INVALID_TOKEN: 'The token is unknown, already used, or expired: ask for a new link.' };
const token = Type.String({
  maxLength: 128,
  description: 'The token from the link in the mail (the part after #token=).',
});

/** Password reset and email verification (CONTRACT "Mail, password reset and email verification"). */
export const recoveryRoutes: FastifyPluginAsyncTypebox<{
  recovery: RecoveryService;
  guard: Authenticator;
  deviceTtlSeconds: number;
}> = async (app, { recovery, guard, deviceTtlSeconds }) => {
  app.post(
    '/api/password/forgot',
    {
      schema: {
        summary: 'Ask for a password-reset link by mail',
        operationId: 'forgotPassword',
        description:
          'Always 202 for a well-formed request, whether or not the email has an account, in about the same ' +
          'time; when it has one, a link to {PUBLIC_URL}/reset-password is mailed (at most 3 per account per 15 minutes).',
        body: Type.Object(
          { email: Type.String({ maxLength: 1024, description: 'The email of the account.' }) },
          { additionalProperties: false },
        ),
        response: {
          202: success(Accepted, 'Accepted; a mail follows if the email has an account.'),
          ...failures(['TOO_MANY_REQUESTS', ...BODY_ERRORS], {
            notes: {
              TOO_MANY_REQUESTS: 'Too many reset requests from this client address (20 per 15 minutes).',
            },
          }),
        },
      },
      config: { noStore: true },
    },
    async (request, reply) => {
      await recovery.forgot(request.body.email, request.ip);
      return reply.code(202).send({ status: 'accepted' as const });
    },
  );

  app.post(
    '/api/password/reset',
    {
      schema: {
        summary: 'Choose a new password with the token from a reset link',
        operationId: 'resetPassword',
        description:
          'Ends every session of the user, voids their other reset links, marks the email verified and mails a notice.',
        body: Type.Object(
          {
            token,
            password: Type.String({
              maxLength: PASSWORD_INPUT_MAX,
              description: `The new password, by the registration rules (8 to ${PASSWORD_MAX} characters after NFKC).`,
              writeOnly: true,
            }),
          },
          { additionalProperties: false },
        ),
        response: {
          204: noContent(
            'The password is changed; every session of the account has ended. This browser is now a known device of the account.',
            'Set-Cookie',
          ),
          ...failures(['INVALID_TOKEN', ...BODY_ERRORS], { notes: TOKEN_NOTES }),
        },
      },
      config: { noStore: true },
    },
    async (request, reply) => {
      const device = await recovery.reset(
        request.body.token,
        request.body.password,
        guard.deviceToken(request),
      );
      if (device) guard.setDeviceCookie(request, reply, device, deviceTtlSeconds);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/api/email/verify',
    {
      schema: {
        summary: 'Confirm an email address with the token from a verification link',
        operationId: 'verifyEmail',
        description: 'The link is good for the address it was mailed to only, once.',
        body: Type.Object({ token }, { additionalProperties: false }),
        response: {
          204: noContent('The email address is verified.'),
          ...failures(['INVALID_TOKEN', ...BODY_ERRORS], { notes: TOKEN_NOTES }),
        },
      },
      config: { noStore: true },
    },
    async (request, reply) => {
      await recovery.verifyEmail(request.body.token);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/api/email/verify/resend',
    {
      schema: {
        summary: 'Mail a new verification link to your email address',
        operationId: 'resendVerification',
        description:
          'Sends nothing when the email is already verified or 3 links went out in the last 15 minutes.',
        response: {
          202: success(Accepted, 'Accepted; a link is mailed unless verified already or too many went out.'),
          ...failures(['UNAUTHENTICATED', 'FORBIDDEN'], {
            notes: { FORBIDDEN: 'The session cookie was sent cross-site.' },
          }),
        },
      },
      config: { auth: 'session', noStore: true },
    },
    async (request, reply) => {
      await recovery.resendVerification(currentSession(request).userId);
      return reply.code(202).send({ status: 'accepted' as const });
    },
  );
};
