// The mails of oauth/ (decision 380): declared here with their texts (mail-texts.ts), sent with
// the mail feature's mechanics. users/email-proven.ts sends identityUnlinked too: it is given the
// mail (services.ts), as it is given the identities, so users/ does not depend on oauth/.
import { defineMails } from '../mail/index.ts';
import { oauthMailTexts } from './mail-texts.ts';

export const oauthMails = defineMails(
  'oauth',
  {
    /** `provider`: the provider's display name (OAUTH_X_NAME), the operator's text. */
    identityLinked: { variables: { provider: 'text' } },
    identityUnlinked: { variables: { provider: 'text' } },
  },
  oauthMailTexts,
);
