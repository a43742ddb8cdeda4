// What other features use of the mail feature: declaring their mails (defineMails) with texts in
// every built-in language, the sentences several features' mails share, and the account-mail
// mechanics to send them (decision 380; docs/development.md, "A feature's mails").
import { dePhrases } from './texts/de.ts';
import { enPhrases } from './texts/en.ts';
import { esPhrases } from './texts/es.ts';
import { frPhrases } from './texts/fr.ts';

export {
  type AccountMail,
  type AccountMailRepositories,
  type Addressee,
  greeted,
  ifProven,
  recipient,
  type TokenLink,
} from './account-mail.ts';
export {
  defineMails,
  type Mail,
  type MailDefinition,
  type MailSpec,
  type Recipient,
  type ValuesOf,
  type VariableKind,
} from './catalog.ts';

/** Per language, the sentences mails of several features say alike (texts/*.ts). */
export const PHRASES = { en: enPhrases, de: dePhrases, fr: frPhrases, es: esPhrases } as const;
