// The mails of passkeys/ (mails.ts declares them) in the four languages Usher ships. Each
// language's house style (German Sie, French spacing, Spanish tú) is written at the top of
// src/mail/texts/<language>.ts, with the sentences mails of several features share.
import { PHRASES } from '../mail/index.ts';

const { en: EN, de: DE, fr: FR, es: ES } = PHRASES;

export const passkeysMailTexts = {
  en: {
    passkeyAdded: {
      subject: 'A passkey was added to your account',
      body: `{hasPasskeyName, select, yes {A passkey named "{passkeyName}"} other {A passkey}} was just added to your account; it can sign in without your password. ${EN.WHEN}

If this was not you, remove it from your account page now, and reset your password.`,
    },
    passkeyRemoved: {
      subject: 'A passkey was removed from your account',
      body: `{hasPasskeyName, select, yes {The passkey named "{passkeyName}"} other {A passkey}} was just removed from your account; it can no longer sign in. ${EN.WHEN}

${EN.NOT_YOU}`,
    },
  },
  de: {
    passkeyAdded: {
      subject: 'Ihrem Konto wurde ein Passkey hinzugefügt',
      body: `{hasPasskeyName, select, yes {Ihrem Konto wurde soeben der Passkey „{passkeyName}“ hinzugefügt} other {Ihrem Konto wurde soeben ein Passkey hinzugefügt}}; damit ist eine Anmeldung ohne Ihr Passwort möglich. ${DE.WHEN}

Falls Sie das nicht waren, entfernen Sie ihn jetzt auf Ihrer Kontoseite und setzen Sie Ihr Passwort zurück.`,
    },
    passkeyRemoved: {
      subject: 'Aus Ihrem Konto wurde ein Passkey entfernt',
      body: `{hasPasskeyName, select, yes {der Passkey „{passkeyName}“ wurde} other {ein Passkey wurde}} soeben aus Ihrem Konto entfernt und ermöglicht keine Anmeldung mehr. ${DE.WHEN}

${DE.NOT_YOU}`,
    },
  },
  fr: {
    passkeyAdded: {
      subject: 'Une clé d’accès a été ajoutée à votre compte',
      body: `{hasPasskeyName, select, yes {La clé d’accès «${FR.NBSP}{passkeyName}${FR.NBSP}» vient d’être ajoutée} other {Une clé d’accès vient d’être ajoutée}} à votre compte${FR.NBSP}; elle permet de se connecter sans votre mot de passe. ${FR.WHEN}

Si ce n’était pas vous, supprimez-la dès maintenant depuis la page de votre compte, puis réinitialisez votre mot de passe.`,
    },
    passkeyRemoved: {
      subject: 'Une clé d’accès a été supprimée de votre compte',
      body: `{hasPasskeyName, select, yes {La clé d’accès «${FR.NBSP}{passkeyName}${FR.NBSP}» vient d’être supprimée} other {Une clé d’accès vient d’être supprimée}} de votre compte${FR.NBSP}; elle ne permet plus de se connecter. ${FR.WHEN}

${FR.NOT_YOU}`,
    },
  },
  es: {
    passkeyAdded: {
      subject: 'Se ha añadido una llave de acceso a tu cuenta',
      body: `{hasPasskeyName, select, yes {Se acaba de añadir la llave de acceso «{passkeyName}» a tu cuenta} other {Se acaba de añadir una llave de acceso a tu cuenta}}; con ella se puede iniciar sesión sin tu contraseña. ${ES.WHEN}

Si no has sido tú, elimínala ahora desde la página de tu cuenta y restablece tu contraseña.`,
    },
    passkeyRemoved: {
      subject: 'Se ha eliminado una llave de acceso de tu cuenta',
      body: `{hasPasskeyName, select, yes {Se acaba de eliminar la llave de acceso «{passkeyName}» de tu cuenta} other {Se acaba de eliminar una llave de acceso de tu cuenta}}; ya no sirve para iniciar sesión. ${ES.WHEN}

${ES.NOT_YOU}`,
    },
  },
};
