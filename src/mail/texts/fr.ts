// Français, en vouvoiement. Espace insécable (NBSP) avant « : » et « ; » et à l’intérieur des
// guillemets, comme le veut la typographie française.
import type { MailLayout } from '../catalog.ts';

const NBSP = '\u00a0';
const IGNORE = `Si vous n’êtes pas à l’origine de cette demande, vous pouvez ignorer ce message${NBSP}: rien ne change tant que le lien n’est pas utilisé.`;
const NOT_YOU = `Si ce n’était pas vous, réinitialisez dès maintenant votre mot de passe avec «${NBSP}Mot de passe oublié${NBSP}» et déconnectez vos autres sessions.`;
const WHEN = 'Cela s’est produit le {at, date, long} à {at, time, short}.';

export const fr: MailLayout = {
  greeting: '{hasName, select, yes {Bonjour {name},} other {Bonjour,}}',
  linkLine: `{action}${NBSP}:\n{url}`,
  closing: '— Usher',
};

/** Sentences that mails of several features say alike (PHRASES, mail/index.ts). */
export const frPhrases = { IGNORE, NOT_YOU, WHEN, NBSP } as const;
