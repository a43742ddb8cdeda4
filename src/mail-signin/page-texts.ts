// The texts of the page a sign-in link opens, GET /signin/email-link (served by pages/routes.ts,
// driven by this feature's POST /api/signin/email-link and …/verify), in each of Usher's
// languages. `{name}` places are filled by the page's script (link.js's t).
import type { PageTextsByLocale, Translated } from '../pages/i18n.ts';

const en = {
  signinEmailLink: {
    title: 'Signing you in',
    email: 'Email',
    askSubmit: 'Email me a new link',
    noscript: 'This page needs JavaScript to sign you in.',
    signingIn: 'Signing you in…',
    signedIn: 'Signed in',
    signedInText: 'You are signed in. Taking you on…',
    oneMoreStep: 'One more step',
    oneMoreStepText: 'Your account needs a code from your authenticator app too.',
    expired: 'This sign-in link has expired or was already used.',
    expiredHint: 'Enter your email to get a new one.',
    notSignedIn: 'Not signed in',
    cannotSignIn: 'This account cannot sign in.',
    failed: 'Something went wrong, and you are not signed in yet. Try again in a moment.',
    enterEmail: 'Enter your email.',
    checkMail: 'Check your mail',
    checkMailText: 'If an account uses this email, a new sign-in link is on its way.',
    checkMailHint: 'It works once, for 15 minutes.',
    tooManyRequests: 'Too many requests. Try again {when}.',
    validEmail: 'Enter a valid email.',
  },
};

type MailSigninPageTexts = Translated<typeof en>;

declare module '../pages/i18n.ts' {
  // These groups join the pages' texts: a page asking for one of them compiles (pages/i18n.ts).
  interface PageTexts extends MailSigninPageTexts {}
}

// Deutsch, in der Sie-Form wie die E-Mails.
const de: MailSigninPageTexts = {
  signinEmailLink: {
    title: 'Sie werden angemeldet',
    email: 'E-Mail-Adresse',
    askSubmit: 'Neuen Link per E-Mail senden',
    noscript: 'Zum Anmelden braucht diese Seite JavaScript.',
    signingIn: 'Sie werden angemeldet …',
    signedIn: 'Angemeldet',
    signedInText: 'Sie sind angemeldet und werden weitergeleitet …',
    oneMoreStep: 'Noch ein Schritt',
    oneMoreStepText: 'Für Ihr Konto brauchen Sie zusätzlich einen Code aus Ihrer Authenticator-App.',
    expired: 'Dieser Anmeldelink ist abgelaufen oder wurde bereits verwendet.',
    expiredHint: 'Geben Sie Ihre E-Mail-Adresse ein, um einen neuen zu erhalten.',
    notSignedIn: 'Nicht angemeldet',
    cannotSignIn: 'Mit diesem Konto ist derzeit keine Anmeldung möglich.',
    failed:
      'Etwas ist schiefgelaufen, und Sie sind noch nicht angemeldet. Versuchen Sie es gleich noch einmal.',
    enterEmail: 'Geben Sie Ihre E-Mail-Adresse ein.',
    checkMail: 'Prüfen Sie Ihr Postfach',
    checkMailText: 'Falls ein Konto diese E-Mail-Adresse verwendet, ist ein neuer Anmeldelink unterwegs.',
    checkMailHint: 'Er funktioniert nur einmal und ist 15 Minuten lang gültig.',
    tooManyRequests: 'Zu viele Anfragen. Versuchen Sie es {when} erneut.',
    validEmail: 'Geben Sie eine gültige E-Mail-Adresse ein.',
  },
};

// Français, en vouvoiement comme les e-mails ; espace insécable avant « : », « ? », « ! » et « ; ».
const fr: MailSigninPageTexts = {
  signinEmailLink: {
    title: 'Connexion en cours',
    email: 'Adresse e-mail',
    askSubmit: 'M’envoyer un nouveau lien',
    noscript: 'Cette page a besoin de JavaScript pour vous connecter.',
    signingIn: 'Connexion en cours…',
    signedIn: 'Connecté',
    signedInText: 'Vous êtes connecté. Redirection en cours…',
    oneMoreStep: 'Encore une étape',
    oneMoreStepText: 'Votre compte demande aussi un code de votre application d’authentification.',
    expired: 'Ce lien de connexion a expiré ou a déjà été utilisé.',
    expiredHint: 'Saisissez votre adresse e-mail pour en recevoir un nouveau.',
    notSignedIn: 'Non connecté',
    cannotSignIn: 'Ce compte ne peut pas se connecter pour le moment.',
    failed: 'Un problème est survenu, et vous n’êtes pas encore connecté. Réessayez dans un instant.',
    enterEmail: 'Saisissez votre adresse e-mail.',
    checkMail: 'Consultez votre messagerie',
    checkMailText: 'Si un compte utilise cette adresse e-mail, un nouveau lien de connexion est en route.',
    checkMailHint: 'Il ne fonctionne qu’une fois, pendant 15 minutes.',
    tooManyRequests: 'Trop de demandes. Réessayez {when}.',
    validEmail: 'Saisissez une adresse e-mail valide.',
  },
};

// Español neutro, tuteando como en los correos.
const es: MailSigninPageTexts = {
  signinEmailLink: {
    title: 'Iniciando sesión',
    email: 'Correo electrónico',
    askSubmit: 'Enviarme un enlace nuevo',
    noscript: 'Esta página necesita JavaScript para iniciar tu sesión.',
    signingIn: 'Iniciando sesión…',
    signedIn: 'Sesión iniciada',
    signedInText: 'Has iniciado sesión. Te estamos redirigiendo…',
    oneMoreStep: 'Un paso más',
    oneMoreStepText: 'Tu cuenta también necesita un código de tu aplicación de autenticación.',
    expired: 'Este enlace para iniciar sesión ha caducado o ya se ha usado.',
    expiredHint: 'Escribe tu correo electrónico para recibir uno nuevo.',
    notSignedIn: 'No se ha iniciado sesión',
    cannotSignIn: 'Esta cuenta no puede iniciar sesión ahora.',
    failed: 'Algo ha fallado y aún no has iniciado sesión. Vuelve a intentarlo dentro de un momento.',
    enterEmail: 'Escribe tu correo electrónico.',
    checkMail: 'Revisa tu correo',
    checkMailText:
      'Si hay una cuenta con este correo electrónico, te hemos enviado un enlace nuevo para iniciar sesión.',
    checkMailHint: 'Solo funciona una vez y es válido durante 15 minutos.',
    tooManyRequests: 'Demasiadas solicitudes. Vuelve a intentarlo {when}.',
    validEmail: 'Escribe un correo electrónico válido.',
  },
};

/** The feature's `pageTexts` (its feature.ts): every language, each with the English groups and keys. */
export const mailSigninPageTexts: PageTextsByLocale<MailSigninPageTexts> = { en, de, fr, es };
