import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { currentSession } from '../sessions/index.ts';
import { BODY_ERRORS, component, failures, noContent, success } from '../shared/schemas.ts';
import type { TotpService } from './service.ts';

export interface TotpRoutesOptions {
  totp: TotpService;
}

const PasswordBody = Type.Object(
  {
    password: Type.Optional(
      Type.String({
        // Not limited: a wrong one of any length is the same refusal.
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
      maxLength: 64,
      description: 'The current 6-digit code your authenticator app shows for the new secret.',
      writeOnly: true,
    }),
  },
  { additionalProperties: false },
);

const SESSION_ERRORS = ['UNAUTHENTICATED', 'FORBIDDEN'] as const;
const PASSWORD_ERRORS = [
  ...SESSION_ERRORS,
  'REAUTHENTICATION_REQUIRED',
  ['SIGNIN_FAILED', 429],
  ...BODY_ERRORS,
] as const;
const NOTES = {
  FORBIDDEN: 'The session cookie was sent cross-site.',
  SIGNIN_FAILED: 'Wrong present passwords have throttled the account.',
  REAUTHENTICATION_REQUIRED:
    'The account has no password (made through a provider) and its sign-in is over 10 minutes old: sign in again.',
  VALIDATION_FAILED: 'The body breaks a rule, or `password` is missing or not your present password.',
  UNAVAILABLE:
    'The database does not answer, the server is shutting down, or it has no ENCRYPTION_KEY to keep TOTP secrets with (PostgreSQL).',
} as const;

export const TotpSetupComponent = component(
  'TotpSetup',
  Type.Object(
    {
      secret: Type.String({
        maxLength: 64,
        pattern: '^[A-Z2-7]+=*$',
        description: 'The shared secret, base32; shown this once.',
      }),
      uri: Type.String({ format: 'uri', maxLength: 1024, description: 'otpauth:// URI for a QR code.' }),
    },
    { additionalProperties: false, description: 'A pending TOTP secret, to enter in an authenticator app.' },
  ),
);

export const RecoveryCodesComponent = component(
  'RecoveryCodes',
  Type.Object(
    {
      recoveryCodes: Type.Array(
        Type.String({ pattern: '^[A-Z2-9]{4}-[A-Z2-9]{4}-[A-Z2-9]{4}$', maxLength: 14 }),
        {
          minItems: 10,
          maxItems: 10,
          description: 'Single-use codes for when the app is lost; stored only as hashes.',
        },
      ),
    },
    {
      additionalProperties: false,
      description: 'Two-step sign-in is on: the recovery codes, shown this once.',
    },
  ),
);

/** Two-step sign-in with TOTP: set-up, confirmation, turning off (CONTRACT "Second factors"). */
export const totpRoutes: FastifyPluginAsyncTypebox<TotpRoutesOptions> = async (app, { totp }) => {
  app.post(
    '/api/mfa/totp',
    {
      schema: {
        summary: 'Start setting up two-step sign-in: a new TOTP secret, pending until confirmed',
        operationId: 'startTotpSetup',
        description:
          'Needs the present password again (an account without one: a sign-in of the last 10 minutes). A new call replaces a pending secret. 409 when two-step ' +
          'sign-in is already on; 503 when the server has no ENCRYPTION_KEY (PostgreSQL). A wrong ' +
          'password counts in the sign-in throttle (429 SIGNIN_FAILED once over it).',
        body: PasswordBody,
        response: {
          200: success(TotpSetupComponent.ref, 'The pending secret.'),
          ...failures([...PASSWORD_ERRORS, 'TOTP_ALREADY_ON'], { notes: NOTES }),
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
        operationId: 'confirmTotp',
        description: 'Answers the 10 recovery codes, shown this once (each signs in once instead of a code).',
        body: ConfirmBody,
        response: {
          200: success(RecoveryCodesComponent.ref, 'Two-step sign-in is on.'),
          ...failures([...SESSION_ERRORS, 'TOTP_ALREADY_ON', ...BODY_ERRORS], {
            notes: {
              ...NOTES,
              VALIDATION_FAILED: 'The body breaks a rule, there is no pending set-up, or the code is wrong.',
            },
          }),
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
        operationId: 'disableTotp',
        description:
          'Also drops a pending set-up and the recovery codes. 204 even when it was not on. An account without a password: a sign-in of the last 10 minutes instead.',
        body: PasswordBody,
        response: {
          204: noContent('Two-step sign-in is off.'),
          ...failures(PASSWORD_ERRORS, { notes: NOTES }),
        },
      },
      config: { auth: 'session', noStore: true },
    },
    async (request, reply) => {
      await totp.disable(currentSession(request), request.body.password, { address: request.ip });
      return reply.code(204).send(null);
    },
  );
};
