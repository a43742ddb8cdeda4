// Français, en vouvoiement. Espace insécable (NBSP) avant « : » et « ; » et à l’intérieur des
// guillemets, comme le veut la typographie française.
import type { MailCatalog } from '../catalog.ts';

const NBSP = '\u00a0';
const IGNORE = `Si vous n’êtes pas à l’origine de cette demande, vous pouvez ignorer ce message${NBSP}: rien ne change tant que le lien n’est pas utilisé.`;
const NOT_YOU = `Si ce n’était pas vous, réinitialisez dès maintenant votre mot de passe avec «${NBSP}Mot de passe oublié${NBSP}» et déconnectez vos autres sessions.`;
const NOT_YOU_FACTOR = `Si ce n’était pas vous, quelqu’un connaît votre mot de passe${NBSP}: réinitialisez-le dès maintenant avec «${NBSP}Mot de passe oublié${NBSP}» et déconnectez vos autres sessions.`;
const WHEN = 'Cela s’est produit le {at, date, long} à {at, time, short}.';

export const fr: MailCatalog = {
  greeting: '{hasName, select, yes {Bonjour {name},} other {Bonjour,}}',
  linkLine: `{action}${NBSP}:\n{url}`,
  closing: '— Usher',
  messages: {
    passwordReset: {
      subject: 'Réinitialisez votre mot de passe',
      body: `Quelqu’un a demandé à réinitialiser le mot de passe du compte associé à cette adresse e-mail.

Le lien ci-dessous vous permet de choisir un nouveau mot de passe. Il ne fonctionne qu’une fois, pendant {validity}.

${IGNORE}`,
      action: 'Choisir un nouveau mot de passe',
    },
    verifyEmail: {
      subject: 'Confirmez votre adresse e-mail',
      body: `Merci de confirmer que cette adresse e-mail appartient bien à votre compte.

Le lien ci-dessous ne fonctionne qu’une fois, pendant {validity}.

${IGNORE}`,
      action: 'Confirmer cette adresse e-mail',
    },
    passkeyAdded: {
      subject: 'Une clé d’accès a été ajoutée à votre compte',
      body: `{hasPasskeyName, select, yes {La clé d’accès «${NBSP}{passkeyName}${NBSP}» vient d’être ajoutée} other {Une clé d’accès vient d’être ajoutée}} à votre compte${NBSP}; elle permet de se connecter sans votre mot de passe. ${WHEN}

Si ce n’était pas vous, supprimez-la dès maintenant depuis la page de votre compte, puis réinitialisez votre mot de passe.`,
    },
    passkeyRemoved: {
      subject: 'Une clé d’accès a été supprimée de votre compte',
      body: `{hasPasskeyName, select, yes {La clé d’accès «${NBSP}{passkeyName}${NBSP}» vient d’être supprimée} other {Une clé d’accès vient d’être supprimée}} de votre compte${NBSP}; elle ne permet plus de se connecter. ${WHEN}

${NOT_YOU}`,
    },
    identityLinked: {
      subject: 'Un compte {provider} a été associé à votre compte',
      body: `Un compte {provider} vient d’être associé à votre compte${NBSP}; il permet désormais de s’y connecter. ${WHEN}

Si ce n’était pas vous, dissociez-le dès maintenant depuis la page de votre compte, puis réinitialisez votre mot de passe.`,
    },
    identityUnlinked: {
      subject: 'Un compte {provider} a été dissocié de votre compte',
      body: `Un compte {provider} vient d’être dissocié de votre compte${NBSP}; il ne permet plus de s’y connecter. ${WHEN}

${NOT_YOU}`,
    },
    accountDeleted: {
      subject: 'Votre compte a été supprimé',
      body: `Votre compte vient d’être supprimé, avec ses sessions, ses clés d’accès, ses produits et ses avis. ${WHEN} Vous ne recevrez plus aucun message à son sujet à cette adresse.

Si ce n’était pas vous, quelqu’un disposait de votre mot de passe ou d’une connexion récente sur l’un de vos appareils. Un compte supprimé ne peut pas être restauré, mais cette adresse peut servir à en créer un nouveau.`,
    },
    passwordChanged: {
      subject: 'Votre mot de passe a été modifié',
      body: `Le mot de passe de votre compte vient d’être modifié. ${WHEN}

${NOT_YOU}`,
    },
    emailChanged: {
      subject: 'L’adresse e-mail de votre compte a été modifiée',
      body: `{hasNewEmail, select, yes {L’adresse e-mail de votre compte vient d’être remplacée par {newEmail}.} other {L’adresse e-mail de votre compte vient d’être remplacée par une autre.}} ${WHEN}

Les messages concernant votre compte sont désormais envoyés à la nouvelle adresse.

${NOT_YOU}`,
    },
    test: {
      subject: 'Message de test d’Usher',
      body: `Ceci est un message de test d’Usher${NBSP}: l’envoi des e-mails fonctionne.`,
    },
    totpEnabled: {
      subject: 'La validation en deux étapes a été activée',
      body: `La validation en deux étapes a été activée sur votre compte le {at, date, long} à {at, time, short}. Pour vous connecter, il vous faut désormais un code de votre application d’authentification en plus de votre mot de passe.

Conservez vos codes de récupération en lieu sûr${NBSP}: chacun d’eux vous permet de vous connecter une fois si vous perdez l’application.

${NOT_YOU_FACTOR}`,
    },
    totpDisabled: {
      subject: 'La validation en deux étapes a été désactivée',
      body: `La validation en deux étapes a été désactivée sur votre compte le {at, date, long} à {at, time, short}. Votre mot de passe suffit désormais pour vous connecter${NBSP}; vos codes de récupération ne fonctionnent plus.

${NOT_YOU_FACTOR}`,
    },
    recoveryCodeUsed: {
      subject: 'Un code de récupération a servi à vous connecter',
      body: `Le {at, date, long} à {at, time, short}, quelqu’un s’est connecté à votre compte avec votre mot de passe et l’un de vos codes de récupération.

Ce code ne fonctionnera plus${NBSP}; {left, plural, =0 {il ne vous reste aucun code de récupération inutilisé} one {il vous reste # code de récupération inutilisé} other {il vous reste # codes de récupération inutilisés}}. Pour en obtenir de nouveaux, désactivez puis réactivez la validation en deux étapes.

${NOT_YOU_FACTOR}`,
    },
    secondFactorFailures: {
      subject: 'Votre mot de passe a été utilisé avec des codes de connexion erronés',
      body: `Quelqu’un s’est connecté avec votre mot de passe, puis a saisi {failures, plural, one {# code erroné} other {# codes erronés d’affilée}} de votre application d’authentification. La validation en deux étapes l’a arrêté, et les codes suivants ne sont désormais vérifiés qu’après un délai croissant. ${WHEN}

Si ce n’était pas vous, quelqu’un connaît votre mot de passe${NBSP}: changez-le dès maintenant (une réinitialisation convient aussi) pour qu’il ne puisse pas continuer d’essayer. La connexion depuis un appareil que vous avez déjà utilisé fonctionne toujours.`,
    },
    invitation: {
      subject: `Invitation${NBSP}: choisissez votre mot de passe`,
      body: `Un compte a été créé pour vous avec cette adresse e-mail. Le lien ci-dessous vous permet d’en choisir le mot de passe${NBSP}; il ne fonctionne qu’une fois, pendant {validity}.

Si vous ne vous attendiez pas à cette invitation, vous pouvez ignorer ce message${NBSP}: sans mot de passe, personne ne peut se connecter à ce compte.`,
      action: 'Choisir votre mot de passe',
    },
    secondFactorsRemoved: {
      subject: 'La validation en deux étapes et les clés d’accès ont été retirées de votre compte',
      body: `À la suite d’une demande adressée au support du service, la validation en deux étapes (TOTP), ses codes de récupération et les clés d’accès de votre compte ont été supprimés le {at, date, long} à {at, time, short}. Vous pouvez désormais vous connecter avec votre seul mot de passe ou un autre moyen de connexion associé.

Si vous n’êtes pas à l’origine de cette demande, réinitialisez votre mot de passe et contactez immédiatement le support.`,
    },
    signinLink: {
      subject: 'Votre lien de connexion',
      body: `Quelqu’un a demandé à se connecter avec cette adresse e-mail. Le lien ci-dessous vous connecte${NBSP}; il ne fonctionne qu’une fois, pendant {validity}.

Si vous n’êtes pas à l’origine de cette demande, vous pouvez ignorer ce message${NBSP}: personne ne peut se connecter sans ce lien.`,
      action: 'Se connecter',
    },
    signinCode: {
      subject: `Votre code de connexion${NBSP}: {code}`,
      body: `Quelqu’un a demandé à se connecter avec cette adresse e-mail. Votre code de connexion est {code}. Il ne fonctionne qu’une fois, pendant {validity}.

Si vous n’êtes pas à l’origine de cette demande, vous pouvez ignorer ce message${NBSP}: personne ne peut se connecter sans ce code. Ne le communiquez jamais à personne, même si on vous le demande.`,
    },
  },
};
