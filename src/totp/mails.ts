// The mails of totp/ (decision 380): declared here with their texts (mail-texts.ts), sent with
// the mail feature's mechanics.
import { defineMails } from '../mail/index.ts';
import { totpMailTexts } from './mail-texts.ts';

export const totpMails = defineMails(
  'totp',
  {
    totpEnabled: {},
    totpDisabled: {},
    /** `left`: the unused codes after this one. */
    recoveryCodeUsed: { variables: { left: 'number' } },
    /** Someone gave the right password and then wrong codes, `failures` times in a row. */
    secondFactorFailures: { variables: { failures: 'number' } },
  },
  totpMailTexts,
);
