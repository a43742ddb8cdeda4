// The mails of passkeys/ (decision 380): declared here with their texts (mail-texts.ts), sent
// with the mail feature's mechanics.
import {
  type AccountMail,
  type AccountMailRepositories,
  type Addressee,
  defineMails,
  ifProven,
  recipient,
} from '../mail/index.ts';
import { passkeysMailTexts } from './mail-texts.ts';

export const passkeysMails = defineMails(
  'passkeys',
  {
    passkeyAdded: { variables: { passkeyName: 'optional' } },
    passkeyRemoved: { variables: { passkeyName: 'optional' } },
  },
  passkeysMailTexts,
);

/** `mail` about the passkey `passkeyName`: the registrant's text, named only to a proven address. */
export function mailPasskeyNotice(
  accountMail: AccountMail,
  repos: Pick<AccountMailRepositories, 'outbox'>,
  mail: (typeof passkeysMails)['passkeyAdded' | 'passkeyRemoved'],
  user: Addressee,
  passkeyName: string,
): Promise<void> {
  return accountMail.send(repos, mail, recipient(user), { passkeyName: ifProven(user, passkeyName) });
}
