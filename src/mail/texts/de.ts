// Deutsch, in der Sie-Form, wie ein Dienst seine Kundschaft anschreibt. Nach der Anrede mit Komma
// beginnt der erste Satz klein (außer mit einem Substantiv oder „Sie“/„Ihr“), wie in einem Brief.
import type { MailLayout } from '../catalog.ts';

const IGNORE =
  'Falls Sie das nicht angefordert haben, können Sie diese Nachricht ignorieren; solange der Link nicht verwendet wird, ändert sich nichts.';
const NOT_YOU =
  'Falls Sie das nicht waren, setzen Sie Ihr Passwort jetzt über „Passwort vergessen“ zurück und melden Sie Ihre anderen Sitzungen ab.';
const WHEN = 'Dies geschah am {at, date, long} um {at, time, short}.';

export const de: MailLayout = {
  greeting: '{hasName, select, yes {Guten Tag {name},} other {Guten Tag,}}',
  linkLine: '{action}:\n{url}',
  closing: '— Usher',
};

/** Sentences that mails of several features say alike (PHRASES, mail/index.ts). */
export const dePhrases = { IGNORE, NOT_YOU, WHEN } as const;
