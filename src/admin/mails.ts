// The mails of admin/ (decision 380): declared here with their texts (mail-texts.ts), sent with
// the mail feature's mechanics.
import {
  type AccountMail,
  type AccountMailRepositories,
  type Addressee,
  defineMails,
  recipient,
} from '../mail/index.ts';
import { adminMailTexts } from './mail-texts.ts';

export const adminMails = defineMails(
  'admin',
  {
    /** An admin's invitation (CONTRACT "Administration"): a link to choose the account's first password. */
    invitation: { link: true, lifetime: true },
    /** Support staff removed the account's second factors (the owner lost them). */
    secondFactorsRemoved: {},
  },
  adminMailTexts,
);

/**
 * An admin's invitation: a password-reset link (the reset page sets the first password) to
 * `user.email`, valid `ttlMs`. The name is the admin's choice, not a stranger's: it greets.
 */
export async function mailInvitation(
  mail: AccountMail,
  repos: AccountMailRepositories,
  user: Addressee,
  ttlMs: number,
): Promise<void> {
  const link = await mail.resetLink(repos, user, ttlMs);
  await mail.send(repos, adminMails.invitation, recipient(user, user.name), link);
}
