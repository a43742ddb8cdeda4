// The mails of admin/ (mails.ts declares them) in the four languages Usher ships. Each
// language's house style (German Sie, French spacing, Spanish tú) is written at the top of
// src/mail/texts/<language>.ts, with the sentences mails of several features share.
import { PHRASES } from '../mail/index.ts';

const { fr: FR } = PHRASES;

export const adminMailTexts = {
  en: {
    invitation: {
      subject: 'You are invited: choose your password',
      body: `An account was made for you with this email address. The link below lets you choose its password; it works once, for {validity}.

If you did not expect this invitation, you can ignore this message: without a password, nobody can sign in with it.`,
      action: 'Choose your password',
    },
    secondFactorsRemoved: {
      subject: 'Two-step sign-in and passkeys were removed from your account',
      body: `At a request to the service's support, two-step sign-in (TOTP), its recovery codes and the passkeys of your account were removed on {at, date, long} at {at, time, short}. Signing in now needs only your password or another linked way in.

If you did not ask for this, reset your password and contact support at once.`,
    },
  },
  de: {
    invitation: {
      subject: 'Sie wurden eingeladen: Legen Sie Ihr Passwort fest',
      body: `für Sie wurde ein Konto mit dieser E-Mail-Adresse angelegt. Über den Link unten können Sie das Passwort dafür festlegen; er funktioniert nur einmal und ist {validity} lang gültig.

Falls Sie diese Einladung nicht erwartet haben, können Sie diese Nachricht ignorieren: Ohne Passwort kann sich niemand bei diesem Konto anmelden.`,
      action: 'Passwort festlegen',
    },
    secondFactorsRemoved: {
      subject: 'Zwei-Faktor-Authentifizierung und Passkeys wurden aus Ihrem Konto entfernt',
      body: `auf eine Anfrage beim Support des Dienstes hin wurden am {at, date, long} um {at, time, short} die Zwei-Faktor-Authentifizierung (TOTP), die zugehörigen Wiederherstellungscodes und die Passkeys Ihres Kontos entfernt. Zur Anmeldung genügt jetzt Ihr Passwort oder eine andere verknüpfte Anmeldemöglichkeit.

Falls Sie das nicht veranlasst haben, setzen Sie Ihr Passwort zurück und wenden Sie sich umgehend an den Support.`,
    },
  },
  fr: {
    invitation: {
      subject: `Invitation${FR.NBSP}: choisissez votre mot de passe`,
      body: `Un compte a été créé pour vous avec cette adresse e-mail. Le lien ci-dessous vous permet d’en choisir le mot de passe${FR.NBSP}; il ne fonctionne qu’une fois, pendant {validity}.

Si vous ne vous attendiez pas à cette invitation, vous pouvez ignorer ce message${FR.NBSP}: sans mot de passe, personne ne peut se connecter à ce compte.`,
      action: 'Choisir votre mot de passe',
    },
    secondFactorsRemoved: {
      subject: 'La validation en deux étapes et les clés d’accès ont été retirées de votre compte',
      body: `À la suite d’une demande adressée au support du service, la validation en deux étapes (TOTP), ses codes de récupération et les clés d’accès de votre compte ont été supprimés le {at, date, long} à {at, time, short}. Vous pouvez désormais vous connecter avec votre seul mot de passe ou un autre moyen de connexion associé.

Si vous n’êtes pas à l’origine de cette demande, réinitialisez votre mot de passe et contactez immédiatement le support.`,
    },
  },
  es: {
    invitation: {
      subject: 'Te han invitado: elige tu contraseña',
      body: `Se ha creado una cuenta para ti con esta dirección de correo electrónico. Con el enlace de abajo puedes elegir su contraseña; solo funciona una vez y es válido durante {validity}.

Si no esperabas esta invitación, puedes ignorar este mensaje: sin contraseña, nadie puede iniciar sesión en esta cuenta.`,
      action: 'Elegir tu contraseña',
    },
    secondFactorsRemoved: {
      subject: 'Se han eliminado la verificación en dos pasos y las llaves de acceso de tu cuenta',
      body: `Tras una solicitud al equipo de soporte del servicio, el {at, date, long} ({at, time, short}) se eliminaron de tu cuenta la verificación en dos pasos (TOTP), sus códigos de recuperación y las llaves de acceso. Ahora puedes iniciar sesión solo con tu contraseña o con otro método vinculado.

Si no lo has solicitado tú, restablece tu contraseña y ponte en contacto con el soporte cuanto antes.`,
    },
  },
};
