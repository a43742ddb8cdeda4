// The mails of users/ (mails.ts declares them) in the four languages Usher ships. Each
// language's house style (German Sie, French spacing, Spanish tú) is written at the top of
// src/mail/texts/<language>.ts, with the sentences mails of several features share.
import { PHRASES } from '../mail/index.ts';

const { en: EN, de: DE, fr: FR, es: ES } = PHRASES;

export const usersMailTexts = {
  en: {
    verifyEmail: {
      subject: 'Confirm your email address',
      body: `Please confirm that this email address belongs to your account.

The link below works once, for {validity}.

${EN.IGNORE}`,
      action: 'Confirm this email address',
    },
    accountDeleted: {
      subject: 'Your account was deleted',
      body: `Your account was just deleted, with its sessions, passkeys, products and reviews. ${EN.WHEN} Nothing more will be sent to this address about it.

If this was not you, someone had your password or a recent sign-in on one of your devices. A deleted account cannot be brought back, but this address can register again.`,
    },
    passwordChanged: {
      subject: 'Your password was changed',
      body: `The password of your account was just changed. ${EN.WHEN}

${EN.NOT_YOU}`,
    },
    emailChanged: {
      subject: 'The email address of your account was changed',
      body: `{hasNewEmail, select, yes {The email address of your account was just changed from this one to {newEmail}.} other {The email address of your account was just changed from this one to another.}} ${EN.WHEN}

Messages about the account now go to the new address.

${EN.NOT_YOU}`,
    },
    identityUnlinked: {
      subject: 'A {provider} account was unlinked from your account',
      body: `A {provider} account was just unlinked from your account; it can no longer sign in to it. ${EN.WHEN}

${EN.NOT_YOU}`,
    },
  },
  de: {
    verifyEmail: {
      subject: 'Bestätigen Sie Ihre E-Mail-Adresse',
      body: `bitte bestätigen Sie, dass diese E-Mail-Adresse zu Ihrem Konto gehört.

Der Link unten funktioniert nur einmal und ist {validity} lang gültig.

${DE.IGNORE}`,
      action: 'E-Mail-Adresse bestätigen',
    },
    accountDeleted: {
      subject: 'Ihr Konto wurde gelöscht',
      body: `Ihr Konto wurde soeben gelöscht, samt allen Sitzungen, Passkeys, Produkten und Bewertungen. ${DE.WHEN} Sie erhalten an diese Adresse keine weiteren Nachrichten zu diesem Konto.

Falls Sie das nicht waren, kannte jemand Ihr Passwort oder nutzte eine kürzliche Anmeldung auf einem Ihrer Geräte. Ein gelöschtes Konto lässt sich nicht wiederherstellen, aber mit dieser Adresse können Sie sich erneut registrieren.`,
    },
    passwordChanged: {
      subject: 'Ihr Passwort wurde geändert',
      body: `das Passwort Ihres Kontos wurde soeben geändert. ${DE.WHEN}

${DE.NOT_YOU}`,
    },
    emailChanged: {
      subject: 'Die E-Mail-Adresse Ihres Kontos wurde geändert',
      body: `{hasNewEmail, select, yes {die E-Mail-Adresse Ihres Kontos wurde soeben von dieser Adresse in {newEmail} geändert.} other {die E-Mail-Adresse Ihres Kontos wurde soeben von dieser Adresse in eine andere geändert.}} ${DE.WHEN}

Nachrichten zu Ihrem Konto gehen ab sofort an die neue Adresse.

${DE.NOT_YOU}`,
    },
    identityUnlinked: {
      subject: 'Ein {provider}-Konto wurde von Ihrem Konto getrennt',
      body: `ein {provider}-Konto wurde soeben von Ihrem Konto getrennt; darüber ist keine Anmeldung bei Ihrem Konto mehr möglich. ${DE.WHEN}

${DE.NOT_YOU}`,
    },
  },
  fr: {
    verifyEmail: {
      subject: 'Confirmez votre adresse e-mail',
      body: `Merci de confirmer que cette adresse e-mail appartient bien à votre compte.

Le lien ci-dessous ne fonctionne qu’une fois, pendant {validity}.

${FR.IGNORE}`,
      action: 'Confirmer cette adresse e-mail',
    },
    accountDeleted: {
      subject: 'Votre compte a été supprimé',
      body: `Votre compte vient d’être supprimé, avec ses sessions, ses clés d’accès, ses produits et ses avis. ${FR.WHEN} Vous ne recevrez plus aucun message à son sujet à cette adresse.

Si ce n’était pas vous, quelqu’un disposait de votre mot de passe ou d’une connexion récente sur l’un de vos appareils. Un compte supprimé ne peut pas être restauré, mais cette adresse peut servir à en créer un nouveau.`,
    },
    passwordChanged: {
      subject: 'Votre mot de passe a été modifié',
      body: `Le mot de passe de votre compte vient d’être modifié. ${FR.WHEN}

${FR.NOT_YOU}`,
    },
    emailChanged: {
      subject: 'L’adresse e-mail de votre compte a été modifiée',
      body: `{hasNewEmail, select, yes {L’adresse e-mail de votre compte vient d’être remplacée par {newEmail}.} other {L’adresse e-mail de votre compte vient d’être remplacée par une autre.}} ${FR.WHEN}

Les messages concernant votre compte sont désormais envoyés à la nouvelle adresse.

${FR.NOT_YOU}`,
    },
    identityUnlinked: {
      subject: 'Un compte {provider} a été dissocié de votre compte',
      body: `Un compte {provider} vient d’être dissocié de votre compte${FR.NBSP}; il ne permet plus de s’y connecter. ${FR.WHEN}

${FR.NOT_YOU}`,
    },
  },
  es: {
    verifyEmail: {
      subject: 'Confirma tu dirección de correo electrónico',
      body: `Confirma que esta dirección de correo electrónico pertenece a tu cuenta.

El enlace de abajo solo funciona una vez y es válido durante {validity}.

${ES.IGNORE}`,
      action: 'Confirmar esta dirección',
    },
    accountDeleted: {
      subject: 'Se ha eliminado tu cuenta',
      body: `Tu cuenta se acaba de eliminar, junto con sus sesiones, llaves de acceso, productos y reseñas. ${ES.WHEN} No se enviará nada más sobre ella a esta dirección.

Si no has sido tú, alguien tenía tu contraseña o una sesión iniciada hace poco en uno de tus dispositivos. Una cuenta eliminada no se puede recuperar, pero puedes volver a registrarte con esta dirección.`,
    },
    passwordChanged: {
      subject: 'Se ha cambiado tu contraseña',
      body: `La contraseña de tu cuenta se acaba de cambiar. ${ES.WHEN}

${ES.NOT_YOU}`,
    },
    emailChanged: {
      subject: 'Se ha cambiado la dirección de correo de tu cuenta',
      body: `{hasNewEmail, select, yes {La dirección de correo de tu cuenta se acaba de cambiar de esta a {newEmail}.} other {La dirección de correo de tu cuenta se acaba de cambiar de esta a otra.}} ${ES.WHEN}

Los mensajes sobre tu cuenta se envían ahora a la nueva dirección.

${ES.NOT_YOU}`,
    },
    identityUnlinked: {
      subject: 'Se ha desvinculado una cuenta de {provider} de tu cuenta',
      body: `Se acaba de desvincular una cuenta de {provider} de tu cuenta; ya no sirve para iniciar sesión en ella. ${ES.WHEN}

${ES.NOT_YOU}`,
    },
  },
};
