// The mails of recovery/ (mails.ts declares them) in the four languages Usher ships. Each
// language's house style (German Sie, French spacing, Spanish tú) is written at the top of
// src/mail/texts/<language>.ts, with the sentences mails of several features share.
import { PHRASES } from '../mail/index.ts';

const { en: EN, de: DE, fr: FR, es: ES } = PHRASES;

export const recoveryMailTexts = {
  en: {
    passwordReset: {
      subject: 'Reset your password',
      body: `Someone asked to reset the password of the account with this email address.

The link below lets you choose a new password. It works once, for {validity}.

${EN.IGNORE}`,
      action: 'Choose a new password',
    },
  },
  de: {
    passwordReset: {
      subject: 'Setzen Sie Ihr Passwort zurück',
      body: `jemand möchte das Passwort des Kontos mit dieser E-Mail-Adresse zurücksetzen.

Über den Link unten können Sie ein neues Passwort wählen. Er funktioniert nur einmal und ist {validity} lang gültig.

${DE.IGNORE}`,
      action: 'Neues Passwort wählen',
    },
  },
  fr: {
    passwordReset: {
      subject: 'Réinitialisez votre mot de passe',
      body: `Quelqu’un a demandé à réinitialiser le mot de passe du compte associé à cette adresse e-mail.

Le lien ci-dessous vous permet de choisir un nouveau mot de passe. Il ne fonctionne qu’une fois, pendant {validity}.

${FR.IGNORE}`,
      action: 'Choisir un nouveau mot de passe',
    },
  },
  es: {
    passwordReset: {
      subject: 'Restablece tu contraseña',
      body: `Alguien ha solicitado restablecer la contraseña de la cuenta asociada a esta dirección de correo electrónico.

Con el enlace de abajo puedes elegir una contraseña nueva. Solo funciona una vez y es válido durante {validity}.

${ES.IGNORE}`,
      action: 'Elegir una contraseña nueva',
    },
  },
};
