// The mails of oauth/ (decision 380): declared here with their texts (mail-texts.ts), sent with
// the mail feature's mechanics. An identity unlinked is the users feature's mail (users/mails.ts):
// users/email-proven.ts sends it too, and oauth/ already depends on users/.
import { defineMails } from '../mail/index.ts';
import { oauthMailTexts } from './mail-texts.ts';

export const oauthMails = defineMails(
  'oauth',
  {
    /** `provider`: the provider's display name (OAUTH_X_NAME), the operator's text. */
    identityLinked: { variables: { provider: 'text' } },
  },
  oauthMailTexts,
);
