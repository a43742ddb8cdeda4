// English: the language Usher is written in, and where every other language falls back.
import type { MailLayout } from '../catalog.ts';

const IGNORE =
  'If you did not ask for this, you can ignore this message; nothing changes until the link is used.';
const NOT_YOU =
  'If this was not you, reset your password now with "Forgot password" and sign out your other sessions.';
const WHEN = 'This happened on {at, date, long} at {at, time, short}.';

export const en: MailLayout = {
  greeting: '{hasName, select, yes {Hello {name},} other {Hello,}}',
  linkLine: '{action}:\n{url}',
  closing: '— Usher',
};

/** Sentences that mails of several features say alike (PHRASES, mail/index.ts). */
export const enPhrases = { IGNORE, NOT_YOU, WHEN } as const;
