// The mails of mail-signin/ (decision 380): declared here with their texts (mail-texts.ts), sent
// through MailService.compose. The name greets only at an address proven its account's; an
// address with no account (EMAIL_SIGNIN_CREATES_ACCOUNTS) is not proven until the link is used.
import { defineMails } from '../mail/index.ts';
import { mailSigninMailTexts } from './mail-texts.ts';

export const mailSigninMails = defineMails(
  'mail-signin',
  {
    /** A sign-in link (CONTRACT "Sign-in by mail"). */
    signinLink: { link: true, lifetime: true },
    /** A sign-in code, with the same rules for the name. */
    signinCode: { lifetime: true, variables: { code: 'text' } },
  },
  mailSigninMailTexts,
);
