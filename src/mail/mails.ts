// The mail feature's own mail: the operators' check of the transport (`usher mail send-test`).
// Declared as any feature declares its mails (decision 380), and gathered with theirs.
import { defineMails } from './catalog.ts';
import { frPhrases } from './texts/fr.ts';

const { NBSP } = frPhrases;

export const mailMails = defineMails(
  'mail',
  { test: {} },
  {
    en: {
      test: {
        subject: 'Test message from Usher',
        body: 'This is a test message from Usher: mail delivery works.',
      },
    },
    de: {
      test: {
        subject: 'Testnachricht von Usher',
        body: 'dies ist eine Testnachricht von Usher: Der E-Mail-Versand funktioniert.',
      },
    },
    fr: {
      test: {
        subject: 'Message de test d’Usher',
        body: `Ceci est un message de test d’Usher${NBSP}: l’envoi des e-mails fonctionne.`,
      },
    },
    es: {
      test: {
        subject: 'Mensaje de prueba de Usher',
        body: 'Este es un mensaje de prueba de Usher: el envío de correo funciona.',
      },
    },
  },
);
