// The mails of mail-signin/ (mails.ts declares them) in the four languages Usher ships. Each
// language's house style (German Sie, French spacing, Spanish tú) is written at the top of
// src/mail/texts/<language>.ts, with the sentences mails of several features share.
import { PHRASES } from '../mail/index.ts';

const { fr: FR } = PHRASES;

export const mailSigninMailTexts = {
  en: {
    signinLink: {
      subject: 'Your sign-in link',
      body: `Someone asked to sign in with this email address. The link below signs you in; it works once, for {validity}.

If you did not ask for this, you can ignore this message: nobody can sign in without the link.`,
      action: 'Sign in',
    },
    signinCode: {
      subject: 'Your sign-in code: {code}',
      body: `Someone asked to sign in with this email address. Your sign-in code is {code}. It works once, for {validity}.

If you did not ask for this, you can ignore this message: nobody can sign in without the code. Never give it to anyone who asks for it.`,
    },
  },
  de: {
    signinLink: {
      subject: 'Ihr Anmeldelink',
      body: `jemand möchte sich mit dieser E-Mail-Adresse anmelden. Über den Link unten werden Sie angemeldet; er funktioniert nur einmal und ist {validity} lang gültig.

Falls Sie das nicht angefordert haben, können Sie diese Nachricht ignorieren: Ohne den Link kann sich niemand anmelden.`,
      action: 'Anmelden',
    },
    signinCode: {
      subject: 'Ihr Anmeldecode: {code}',
      body: `jemand möchte sich mit dieser E-Mail-Adresse anmelden. Ihr Anmeldecode lautet {code}. Er funktioniert nur einmal und ist {validity} lang gültig.

Falls Sie das nicht angefordert haben, können Sie diese Nachricht ignorieren: Ohne den Code kann sich niemand anmelden. Geben Sie ihn niemals weiter, auch nicht auf Nachfrage.`,
    },
  },
  fr: {
    signinLink: {
      subject: 'Votre lien de connexion',
      body: `Quelqu’un a demandé à se connecter avec cette adresse e-mail. Le lien ci-dessous vous connecte${FR.NBSP}; il ne fonctionne qu’une fois, pendant {validity}.

Si vous n’êtes pas à l’origine de cette demande, vous pouvez ignorer ce message${FR.NBSP}: personne ne peut se connecter sans ce lien.`,
      action: 'Se connecter',
    },
    signinCode: {
      subject: `Votre code de connexion${FR.NBSP}: {code}`,
      body: `Quelqu’un a demandé à se connecter avec cette adresse e-mail. Votre code de connexion est {code}. Il ne fonctionne qu’une fois, pendant {validity}.

Si vous n’êtes pas à l’origine de cette demande, vous pouvez ignorer ce message${FR.NBSP}: personne ne peut se connecter sans ce code. Ne le communiquez jamais à personne, même si on vous le demande.`,
    },
  },
  es: {
    signinLink: {
      subject: 'Tu enlace para iniciar sesión',
      body: `Alguien ha solicitado iniciar sesión con esta dirección de correo electrónico. El enlace de abajo inicia tu sesión; solo funciona una vez y es válido durante {validity}.

Si no lo has solicitado tú, puedes ignorar este mensaje: nadie puede iniciar sesión sin el enlace.`,
      action: 'Iniciar sesión',
    },
    signinCode: {
      subject: 'Tu código para iniciar sesión: {code}',
      body: `Alguien ha solicitado iniciar sesión con esta dirección de correo electrónico. Tu código es {code}. Solo funciona una vez y es válido durante {validity}.

Si no lo has solicitado tú, puedes ignorar este mensaje: nadie puede iniciar sesión sin el código. No se lo des nunca a nadie, aunque te lo pida.`,
    },
  },
};
