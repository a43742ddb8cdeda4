// The example feature's mail, declared with its texts in every built-in language (a missing
// language or key fails to compile), sent with the mail feature's mechanics.
import { defineMails, PHRASES } from '../../../src/mail/index.ts';

const { en: EN, de: DE, fr: FR, es: ES } = PHRASES;

export const exampleMails = defineMails(
  'example',
  {
    /** `length`: the note's length in characters. */
    noteAdded: { variables: { length: 'number' } },
  },
  {
    en: {
      noteAdded: {
        subject: 'A note was added to your account',
        body: `A note of {length, plural, one {# character} other {# characters}} was added to your account. ${EN.WHEN}`,
      },
    },
    de: {
      noteAdded: {
        subject: 'Ihrem Konto wurde eine Notiz hinzugefügt',
        body: `Ihrem Konto wurde eine Notiz mit {length, plural, one {# Zeichen} other {# Zeichen}} hinzugefügt. ${DE.WHEN}`,
      },
    },
    fr: {
      noteAdded: {
        subject: 'Une note a été ajoutée à votre compte',
        body: `Une note de {length, plural, one {# caractère} other {# caractères}} a été ajoutée à votre compte. ${FR.WHEN}`,
      },
    },
    es: {
      noteAdded: {
        subject: 'Se ha añadido una nota a tu cuenta',
        body: `Se ha añadido a tu cuenta una nota de {length, plural, one {# carácter} other {# caracteres}}. ${ES.WHEN}`,
      },
    },
  },
);
