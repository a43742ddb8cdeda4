import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { currentSession } from '../sessions/guard.ts';
import { BODY_ERRORS, errorBody, SERVER_ERRORS } from '../shared/schemas.ts';
import type { RecoveryService } from './service.ts';

const Accepted = Type.Object(
  { status: Type.Literal('accepted') },
  { additionalProperties: false, description: 'Accepted: whatever follows happens by mail.' },
);
const token = Type.String({
  maxLength: 128,
  description: 'The token from the link in the mail (the part after #token=).',
});

/** Password reset and email verification (CONTRACT "Mail, password reset and email verification"). */
export const recoveryRoutes: FastifyPluginAsyncTypebox<{ recovery: RecoveryService }> = async (
  app,
  { recovery },
) => {
  app.post(
    '/api/password/forgot',
    {
      schema: {
        summary: 'Ask for a password-reset link by mail',
        description:
          'Always 202 for a well-formed request, whether or not the email has an account, in about the same ' +
          'time; when it has one, a link to {PUBLIC_URL}/reset-password is mailed (at most 3 per account per 15 minutes).',
        body: Type.Object(
          { email: Type.String({ maxLength: 1024, description: 'The email of the account.' }) },
          { additionalProperties: false },
        ),
        response: {
          202: Accepted,
          default: errorBody('TOO_MANY_REQUESTS', ...BODY_ERRORS, ...SERVER_ERRORS),
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
        description:
          'Ends every session of the user, voids their other reset links, marks the email verified and mails a notice.',
        body: Type.Object(
          {
            token,
            password: Type.String({
              description: 'The new password, by the registration rules.',
              writeOnly: true,
            }),
          },
          { additionalProperties: false },
        ),
        response: {
          204: Type.Null(),
          default: errorBody('INVALID_TOKEN', ...BODY_ERRORS, ...SERVER_ERRORS),
        },
      },
      config: { noStore: true },
    },
    async (request, reply) => {
      await recovery.reset(request.body.token, request.body.password);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/api/email/verify',
    {
      schema: {
        summary: 'Confirm an email address with the token from a verification link',
        body: Type.Object({ token }, { additionalProperties: false }),
        response: { 204: Type.Null(), default: errorBody('INVALID_TOKEN', ...BODY_ERRORS, ...SERVER_ERRORS) },
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
        description:
          'Sends nothing when the email is already verified or 3 links went out in the last 15 minutes.',
        response: { 202: Accepted, default: errorBody('UNAUTHENTICATED', 'FORBIDDEN', ...SERVER_ERRORS) },
      },
      config: { auth: 'session', noStore: true },
    },
    async (request, reply) => {
      await recovery.resendVerification(currentSession(request).userId);
      return reply.code(202).send({ status: 'accepted' as const });
    },
  );
};
