// The mails of totp/ (mails.ts declares them) in the four languages Usher ships. Each
// language's house style (German Sie, French spacing, Spanish tú) is written at the top of
// src/mail/texts/<language>.ts, with the sentences mails of several features share.
import { PHRASES } from '../mail/index.ts';

const { en: EN, de: DE, fr: FR, es: ES } = PHRASES;

/** After a second factor changed or was used: whoever did it has the password. */
const NOT_YOU_FACTOR = {
  en: 'If this was not you, someone has your password: reset it now with "Forgot password" and sign out your other sessions.',
  de: 'Falls Sie das nicht waren, kennt jemand Ihr Passwort: Setzen Sie es jetzt über „Passwort vergessen“ zurück und melden Sie Ihre anderen Sitzungen ab.',
  fr: `Si ce n’était pas vous, quelqu’un connaît votre mot de passe${FR.NBSP}: réinitialisez-le dès maintenant avec «${FR.NBSP}Mot de passe oublié${FR.NBSP}» et déconnectez vos autres sessions.`,
  es: 'Si no has sido tú, alguien conoce tu contraseña: restablécela ahora con «¿Olvidaste tu contraseña?» y cierra tus otras sesiones.',
};

export const totpMailTexts = {
  en: {
    totpEnabled: {
      subject: 'Two-step sign-in was turned on',
      body: `Two-step sign-in was turned on for your account on {at, date, long} at {at, time, short}. Signing in now needs a code from your authenticator app as well as your password.

Keep your recovery codes somewhere safe: each one signs you in once if you lose the app.

${NOT_YOU_FACTOR.en}`,
    },
    totpDisabled: {
      subject: 'Two-step sign-in was turned off',
      body: `Two-step sign-in was turned off for your account on {at, date, long} at {at, time, short}. Signing in now needs only your password; your recovery codes no longer work.

${NOT_YOU_FACTOR.en}`,
    },
    recoveryCodeUsed: {
      subject: 'A recovery code was used to sign in',
      body: `Someone signed in to your account on {at, date, long} at {at, time, short} with your password and one of your recovery codes.

That code will not work again; {left, plural, =0 {you have no unused recovery codes left} one {you have # unused recovery code left} other {you have # unused recovery codes left}}. To get new ones, turn two-step sign-in off and on again.

${NOT_YOU_FACTOR.en}`,
    },
    secondFactorFailures: {
      subject: 'Your password was used with wrong sign-in codes',
      body: `Someone signed in with your password and then gave {failures, plural, one {# wrong code} other {# wrong codes in a row}} from your authenticator app. Two-step sign-in stopped them, and further codes are now checked only after a growing delay. ${EN.WHEN}

If this was not you, someone knows your password: change it now (a password reset works too), so that they cannot keep trying. Signing in from a device you have used before still works.`,
    },
  },
  de: {
    totpEnabled: {
      subject: 'Die Zwei-Faktor-Authentifizierung wurde aktiviert',
      body: `für Ihr Konto wurde am {at, date, long} um {at, time, short} die Zwei-Faktor-Authentifizierung aktiviert. Zur Anmeldung brauchen Sie jetzt zusätzlich zu Ihrem Passwort einen Code aus Ihrer Authenticator-App.

Bewahren Sie Ihre Wiederherstellungscodes an einem sicheren Ort auf: Mit jedem davon können Sie sich einmal anmelden, falls Sie die App verlieren.

${NOT_YOU_FACTOR.de}`,
    },
    totpDisabled: {
      subject: 'Die Zwei-Faktor-Authentifizierung wurde deaktiviert',
      body: `für Ihr Konto wurde am {at, date, long} um {at, time, short} die Zwei-Faktor-Authentifizierung deaktiviert. Zur Anmeldung genügt jetzt Ihr Passwort; Ihre Wiederherstellungscodes sind nicht mehr gültig.

${NOT_YOU_FACTOR.de}`,
    },
    recoveryCodeUsed: {
      subject: 'Anmeldung mit einem Wiederherstellungscode',
      body: `am {at, date, long} um {at, time, short} hat sich jemand mit Ihrem Passwort und einem Ihrer Wiederherstellungscodes bei Ihrem Konto angemeldet.

Dieser Code funktioniert kein zweites Mal; {left, plural, =0 {Sie haben keine unbenutzten Wiederherstellungscodes mehr} one {Sie haben noch # unbenutzten Wiederherstellungscode} other {Sie haben noch # unbenutzte Wiederherstellungscodes}}. Neue Codes erhalten Sie, indem Sie die Zwei-Faktor-Authentifizierung aus- und wieder einschalten.

${NOT_YOU_FACTOR.de}`,
    },
    secondFactorFailures: {
      subject: 'Ihr Passwort wurde mit falschen Anmeldecodes verwendet',
      body: `jemand hat sich mit Ihrem Passwort angemeldet und danach {failures, plural, one {# falschen Code} other {# falsche Codes hintereinander}} aus Ihrer Authenticator-App eingegeben. Die Zwei-Faktor-Authentifizierung hat die Anmeldung verhindert, und weitere Codes werden jetzt erst nach einer wachsenden Wartezeit geprüft. ${DE.WHEN}

Falls Sie das nicht waren, kennt jemand Ihr Passwort: Ändern Sie es jetzt (auch das Zurücksetzen des Passworts ist möglich), damit niemand weiter probieren kann. Die Anmeldung von einem Gerät, das Sie schon einmal verwendet haben, funktioniert weiterhin.`,
    },
  },
  fr: {
    totpEnabled: {
      subject: 'La validation en deux étapes a été activée',
      body: `La validation en deux étapes a été activée sur votre compte le {at, date, long} à {at, time, short}. Pour vous connecter, il vous faut désormais un code de votre application d’authentification en plus de votre mot de passe.

Conservez vos codes de récupération en lieu sûr${FR.NBSP}: chacun d’eux vous permet de vous connecter une fois si vous perdez l’application.

${NOT_YOU_FACTOR.fr}`,
    },
    totpDisabled: {
      subject: 'La validation en deux étapes a été désactivée',
      body: `La validation en deux étapes a été désactivée sur votre compte le {at, date, long} à {at, time, short}. Votre mot de passe suffit désormais pour vous connecter${FR.NBSP}; vos codes de récupération ne fonctionnent plus.

${NOT_YOU_FACTOR.fr}`,
    },
    recoveryCodeUsed: {
      subject: 'Un code de récupération a servi à vous connecter',
      body: `Le {at, date, long} à {at, time, short}, quelqu’un s’est connecté à votre compte avec votre mot de passe et l’un de vos codes de récupération.

Ce code ne fonctionnera plus${FR.NBSP}; {left, plural, =0 {il ne vous reste aucun code de récupération inutilisé} one {il vous reste # code de récupération inutilisé} other {il vous reste # codes de récupération inutilisés}}. Pour en obtenir de nouveaux, désactivez puis réactivez la validation en deux étapes.

${NOT_YOU_FACTOR.fr}`,
    },
    secondFactorFailures: {
      subject: 'Votre mot de passe a été utilisé avec des codes de connexion erronés',
      body: `Quelqu’un s’est connecté avec votre mot de passe, puis a saisi {failures, plural, one {# code erroné} other {# codes erronés d’affilée}} de votre application d’authentification. La validation en deux étapes l’a arrêté, et les codes suivants ne sont désormais vérifiés qu’après un délai croissant. ${FR.WHEN}

Si ce n’était pas vous, quelqu’un connaît votre mot de passe${FR.NBSP}: changez-le dès maintenant (une réinitialisation convient aussi) pour qu’il ne puisse pas continuer d’essayer. La connexion depuis un appareil que vous avez déjà utilisé fonctionne toujours.`,
    },
  },
  es: {
    totpEnabled: {
      subject: 'Se ha activado la verificación en dos pasos',
      body: `La verificación en dos pasos se activó en tu cuenta el {at, date, long} ({at, time, short}). Ahora, para iniciar sesión, necesitas un código de tu aplicación de autenticación además de tu contraseña.

Guarda tus códigos de recuperación en un lugar seguro: cada uno te permite iniciar sesión una vez si pierdes la aplicación.

${NOT_YOU_FACTOR.es}`,
    },
    totpDisabled: {
      subject: 'Se ha desactivado la verificación en dos pasos',
      body: `La verificación en dos pasos se desactivó en tu cuenta el {at, date, long} ({at, time, short}). Ahora solo necesitas tu contraseña para iniciar sesión; tus códigos de recuperación ya no funcionan.

${NOT_YOU_FACTOR.es}`,
    },
    recoveryCodeUsed: {
      subject: 'Se ha usado un código de recuperación para iniciar sesión',
      body: `El {at, date, long} ({at, time, short}), alguien inició sesión en tu cuenta con tu contraseña y uno de tus códigos de recuperación.

Ese código no volverá a funcionar; {left, plural, =0 {no te queda ningún código de recuperación sin usar} one {te queda # código de recuperación sin usar} other {te quedan # códigos de recuperación sin usar}}. Para obtener códigos nuevos, desactiva la verificación en dos pasos y vuelve a activarla.

${NOT_YOU_FACTOR.es}`,
    },
    secondFactorFailures: {
      subject: 'Se ha usado tu contraseña con códigos de inicio de sesión incorrectos',
      body: `Alguien inició sesión con tu contraseña y después introdujo {failures, plural, one {# código incorrecto} other {# códigos incorrectos seguidos}} de tu aplicación de autenticación. La verificación en dos pasos se lo impidió, y a partir de ahora los códigos siguientes solo se comprueban tras una espera cada vez mayor. ${ES.WHEN}

Si no has sido tú, alguien conoce tu contraseña: cámbiala ahora (también puedes restablecerla) para que no pueda seguir intentándolo. Iniciar sesión desde un dispositivo que ya hayas usado sigue funcionando.`,
    },
  },
};
