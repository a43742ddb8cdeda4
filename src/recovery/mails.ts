// The mails of recovery/ (decision 380): declared here with their texts (mail-texts.ts), sent
// with the mail feature's mechanics; admin/ sends a reset too, through index.ts.
import {
  type AccountMail,
  type AccountMailRepositories,
  type Addressee,
  defineMails,
  recipient,
} from '../mail/index.ts';
import { recoveryMailTexts } from './mail-texts.ts';

export const recoveryMails = defineMails(
  'recovery',
  { passwordReset: { link: true, lifetime: true } },
  recoveryMailTexts,
);

/** A link to {PUBLIC_URL}/reset-password, valid PASSWORD_RESET_TTL_SECONDS. */
export async function mailPasswordReset(
  mail: AccountMail,
  repos: AccountMailRepositories,
  user: Addressee,
): Promise<void> {
  const link = await mail.resetLink(repos, user);
  await mail.send(repos, recoveryMails.passwordReset, recipient(user), link);
}
