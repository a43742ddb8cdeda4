import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { currentSession } from '../sessions/guard.ts';
import { BODY_ERRORS, errorBody, SERVER_ERRORS } from '../shared/schemas.ts';
import type { TotpService } from './service.ts';

export interface MfaRoutesOptions {
  totp: TotpService;
}

const PasswordBody = Type.Object(
  {
    password: Type.Optional(
      Type.String({
        description: 'Your present password; a wrong one counts in the sign-in throttle.',
        writeOnly: true,
      }),
    ),
  },
  { additionalProperties: false },
);
const ConfirmBody = Type.Object(
  {
    code: Type.String({
      description: 'The current 6-digit code your authenticator app shows for the new secret.',
      writeOnly: true,
    }),
  },
  { additionalProperties: false },
);

const SESSION_ERRORS = ['UNAUTHENTICATED', 'FORBIDDEN'] as const;
const PASSWORD_ERRORS = [...SESSION_ERRORS, 'SIGNIN_FAILED', ...BODY_ERRORS, ...SERVER_ERRORS] as const;

/** Two-step sign-in with TOTP: set-up, confirmation, turning off (CONTRACT "Second factors"). */
export const mfaRoutes: FastifyPluginAsyncTypebox<MfaRoutesOptions> = async (app, { totp }) => {
  app.post(
    '/api/mfa/totp',
    {
      schema: {
        summary: 'Start setting up two-step sign-in: a new TOTP secret, pending until confirmed',
        description:
          'Needs the present password again. A new call replaces a pending secret. 409 when two-step ' +
          'sign-in is already on; 503 when the server has no ENCRYPTION_KEY (PostgreSQL). A wrong ' +
          'password counts in the sign-in throttle (429 SIGNIN_FAILED once over it).',
        body: PasswordBody,
        response: {
          200: Type.Object(
            {
              secret: Type.String({ description: 'The shared secret, base32; shown this once.' }),
              uri: Type.String({ description: 'otpauth:// URI for a QR code.' }),
            },
            { additionalProperties: false },
          ),
          default: errorBody(...PASSWORD_ERRORS, 'TOTP_ALREADY_ON'),
        },
      },
      config: { auth: 'session', noStore: true },
    },
    async (request) => totp.begin(currentSession(request), request.body.password, { address: request.ip }),
  );

  app.post(
    '/api/mfa/totp/confirm',
    {
      schema: {
        summary: 'Confirm the pending TOTP secret with a code: two-step sign-in is on',
        description: 'Answers the 10 recovery codes, shown this once (each signs in once instead of a code).',
        body: ConfirmBody,
        response: {
          200: Type.Object(
            {
              recoveryCodes: Type.Array(Type.String(), {
                minItems: 10,
                maxItems: 10,
                description: 'Single-use codes for when the app is lost; stored only as hashes.',
              }),
            },
            { additionalProperties: false },
          ),
          default: errorBody(...SESSION_ERRORS, 'TOTP_ALREADY_ON', ...BODY_ERRORS, ...SERVER_ERRORS),
        },
      },
      config: { auth: 'session', noStore: true },
    },
    async (request) => totp.confirm(currentSession(request), request.body.code),
  );

  app.delete(
    '/api/mfa/totp',
    {
      schema: {
        summary: 'Turn two-step sign-in off (the present password again)',
        description: 'Also drops a pending set-up and the recovery codes. 204 even when it was not on.',
        body: PasswordBody,
        response: { 204: Type.Null(), default: errorBody(...PASSWORD_ERRORS) },
      },
      config: { auth: 'session', noStore: true },
    },
    async (request, reply) => {
      await totp.disable(currentSession(request), request.body.password, { address: request.ip });
      return reply.code(204).send(null);
    },
  );
};
