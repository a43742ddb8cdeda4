// The mails of oauth/ (mails.ts declares them) in the four languages Usher ships. Each
// language's house style (German Sie, French spacing, Spanish tú) is written at the top of
// src/mail/texts/<language>.ts, with the sentences mails of several features share.
import { PHRASES } from '../mail/index.ts';

const { en: EN, de: DE, fr: FR, es: ES } = PHRASES;

export const oauthMailTexts = {
  en: {
    identityLinked: {
      subject: 'Your {provider} account was linked to your account',
      body: `A {provider} account was just linked to your account; it can now sign in to it. ${EN.WHEN}

If this was not you, unlink it from your account page now, and reset your password.`,
    },
  },
  de: {
    identityLinked: {
      subject: 'Ein {provider}-Konto wurde mit Ihrem Konto verknüpft',
      body: `ein {provider}-Konto wurde soeben mit Ihrem Konto verknüpft; darüber ist jetzt eine Anmeldung bei Ihrem Konto möglich. ${DE.WHEN}

Falls Sie das nicht waren, heben Sie die Verknüpfung jetzt auf Ihrer Kontoseite auf und setzen Sie Ihr Passwort zurück.`,
    },
  },
  fr: {
    identityLinked: {
      subject: 'Un compte {provider} a été associé à votre compte',
      body: `Un compte {provider} vient d’être associé à votre compte${FR.NBSP}; il permet désormais de s’y connecter. ${FR.WHEN}

Si ce n’était pas vous, dissociez-le dès maintenant depuis la page de votre compte, puis réinitialisez votre mot de passe.`,
    },
  },
  es: {
    identityLinked: {
      subject: 'Se ha vinculado una cuenta de {provider} a tu cuenta',
      body: `Se acaba de vincular una cuenta de {provider} a tu cuenta; desde ahora sirve para iniciar sesión en ella. ${ES.WHEN}

Si no has sido tú, desvincúlala ahora desde la página de tu cuenta y restablece tu contraseña.`,
    },
  },
};
