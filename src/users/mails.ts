// The mails of users/ (decision 380): declared here with their texts (mail-texts.ts), sent with
// the mail feature's mechanics. Other features send them too (recovery/, admin/, oauth/), through
// index.ts: a mail two features send is declared by the one the other already depends on.
import {
  type AccountMail,
  type AccountMailRepositories,
  type Addressee,
  defineMails,
  recipient,
} from '../mail/index.ts';
import { usersMailTexts } from './mail-texts.ts';

export const usersMails = defineMails(
  'users',
  {
    verifyEmail: { link: true, lifetime: true },
    accountDeleted: {},
    passwordChanged: {},
    emailChanged: { variables: { newEmail: 'optional' } },
    /** `provider`: the provider's display name (OAUTH_X_NAME), the operator's text. */
    identityUnlinked: { variables: { provider: 'text' } },
  },
  usersMailTexts,
);

/**
 * A link to {PUBLIC_URL}/verify-email proving `user.email`, valid EMAIL_VERIFY_TTL_SECONDS. Always
 * to an address not proven yet: nothing in it is the registrant's text, not even the name.
 */
export async function mailVerification(
  mail: AccountMail,
  repos: AccountMailRepositories,
  user: Addressee,
): Promise<void> {
  const link = await mail.verificationLink(repos, user);
  await mail.send(repos, usersMails.verifyEmail, recipient(user, undefined), link);
}

export function mailPasswordChanged(
  mail: AccountMail,
  repos: Pick<AccountMailRepositories, 'outbox'>,
  user: Addressee,
): Promise<void> {
  return mail.send(repos, usersMails.passwordChanged, recipient(user), {});
}

/**
 * A goodbye to the address of an account being deleted, in the transaction that deletes it: the
 * outbox has no foreign key to users, so the message outlives the row it was about.
 */
export function mailAccountDeleted(
  mail: AccountMail,
  repos: Pick<AccountMailRepositories, 'outbox'>,
  user: Addressee,
): Promise<void> {
  return mail.send(repos, usersMails.accountDeleted, recipient(user), {});
}

/**
 * To the address the account had before (`previous`), so its owner learns of a change they did
 * not make. The new address is the registrant's text too: named only to a proven old address.
 */
export function mailEmailChanged(
  mail: AccountMail,
  repos: Pick<AccountMailRepositories, 'outbox'>,
  user: Addressee,
  previous: Pick<Addressee, 'email' | 'emailVerified'>,
): Promise<void> {
  const proven = previous.emailVerified;
  return mail.send(
    repos,
    usersMails.emailChanged,
    { email: previous.email, locale: user.locale, name: proven ? user.name : undefined },
    { newEmail: proven ? user.email : undefined },
  );
}
