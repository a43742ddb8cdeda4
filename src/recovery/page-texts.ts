// The texts of the two pages a mailed link opens, GET /reset-password and GET /verify-email
// (served by pages/routes.ts, driven by this feature's POST /api/password/reset and
// /api/email/verify), in each of Usher's languages. `{name}` places are filled by the page's script
// (link.js's t).
import type { PageTextsByLocale, Translated } from '../pages/i18n.ts';

const en = {
  resetPassword: {
    title: 'Choose a new password',
    newPassword: 'New password',
    newPasswordAgain: 'New password, again',
    showPasswords: 'Show passwords',
    passwordHint: 'At least 8 characters. Very common passwords are refused.',
    changePassword: 'Change password',
    noscript: 'This page needs JavaScript to change your password.',
    expired: 'This link has expired or was already used. Ask for a new one.',
    passwordRefused:
      'This password is not accepted: it needs at least 8 characters and must not be a very common password.',
    typePassword: 'Type your new password.',
    notSame: 'The two passwords are not the same. Type the new password again in both fields.',
    changing: 'Changing…',
    changed: 'Password changed',
    changedText: 'Your password was changed. You can now sign in with it.',
    signedOutEverywhere: 'For your safety, every session of your account was signed out, on every device.',
    failed: 'Something went wrong, and your password may not have been changed.',
    failedHint: 'Try again in a moment. If it keeps failing, ask for a new link.',
    signInNow: 'Sign in with your new password',
  },
  verifyEmail: {
    title: 'Confirm your email address',
    noscript: 'This page needs JavaScript to confirm your email address.',
    confirming: 'Confirming your email address…',
    confirmed: 'Email address confirmed',
    confirmedText: 'Your email address is confirmed.',
    closePage: 'You can close this page.',
    expired: 'This link has expired or was already used.',
    expiredHint: 'If your address is not confirmed yet, sign in and ask for a new link.',
    failed: 'Something went wrong, and your address is not confirmed yet. Try again in a moment.',
  },
};

type RecoveryPageTexts = Translated<typeof en>;

declare module '../pages/i18n.ts' {
  // These groups join the pages' texts: a page asking for one of them compiles (pages/i18n.ts).
  interface PageTexts extends RecoveryPageTexts {}
}

// Deutsch, in der Sie-Form wie die E-Mails.
const de: RecoveryPageTexts = {
  resetPassword: {
    title: 'Neues Passwort wählen',
    newPassword: 'Neues Passwort',
    newPasswordAgain: 'Neues Passwort wiederholen',
    showPasswords: 'Passwörter anzeigen',
    passwordHint: 'Mindestens 8 Zeichen. Sehr häufige Passwörter werden abgelehnt.',
    changePassword: 'Passwort ändern',
    noscript: 'Zum Ändern Ihres Passworts braucht diese Seite JavaScript.',
    expired: 'Dieser Link ist abgelaufen oder wurde bereits verwendet. Fordern Sie einen neuen an.',
    passwordRefused:
      'Dieses Passwort wird nicht akzeptiert: Es muss mindestens 8 Zeichen haben und darf kein sehr häufiges Passwort sein.',
    typePassword: 'Geben Sie Ihr neues Passwort ein.',
    notSame:
      'Die beiden Passwörter stimmen nicht überein. Geben Sie das neue Passwort in beiden Feldern erneut ein.',
    changing: 'Wird geändert …',
    changed: 'Passwort geändert',
    changedText: 'Ihr Passwort wurde geändert. Sie können sich jetzt damit anmelden.',
    signedOutEverywhere:
      'Zu Ihrer Sicherheit wurden alle Sitzungen Ihres Kontos auf allen Geräten abgemeldet.',
    failed: 'Etwas ist schiefgelaufen, und Ihr Passwort wurde möglicherweise nicht geändert.',
    failedHint:
      'Versuchen Sie es gleich noch einmal. Wenn es weiterhin nicht funktioniert, fordern Sie einen neuen Link an.',
    signInNow: 'Mit dem neuen Passwort anmelden',
  },
  verifyEmail: {
    title: 'E-Mail-Adresse bestätigen',
    noscript: 'Zum Bestätigen Ihrer E-Mail-Adresse braucht diese Seite JavaScript.',
    confirming: 'Ihre E-Mail-Adresse wird bestätigt …',
    confirmed: 'E-Mail-Adresse bestätigt',
    confirmedText: 'Ihre E-Mail-Adresse ist bestätigt.',
    closePage: 'Sie können diese Seite jetzt schließen.',
    expired: 'Dieser Link ist abgelaufen oder wurde bereits verwendet.',
    expiredHint:
      'Falls Ihre Adresse noch nicht bestätigt ist, melden Sie sich an und fordern Sie einen neuen Link an.',
    failed:
      'Etwas ist schiefgelaufen, und Ihre Adresse ist noch nicht bestätigt. Versuchen Sie es gleich noch einmal.',
  },
};

// Français, en vouvoiement comme les e-mails ; espace insécable avant « : », « ? », « ! » et « ; ».

const _ = '\u00a0';

const fr: RecoveryPageTexts = {
  resetPassword: {
    title: 'Choisissez un nouveau mot de passe',
    newPassword: 'Nouveau mot de passe',
    newPasswordAgain: 'Confirmez le nouveau mot de passe',
    showPasswords: 'Afficher les mots de passe',
    passwordHint: 'Au moins 8 caractères. Les mots de passe très courants sont refusés.',
    changePassword: 'Changer le mot de passe',
    noscript: 'Cette page a besoin de JavaScript pour changer votre mot de passe.',
    expired: 'Ce lien a expiré ou a déjà été utilisé. Demandez-en un nouveau.',
    passwordRefused: `Ce mot de passe n’est pas accepté${_}: il doit comporter au moins 8 caractères et ne pas être un mot de passe très courant.`,
    typePassword: 'Saisissez votre nouveau mot de passe.',
    notSame:
      'Les deux mots de passe ne sont pas identiques. Saisissez à nouveau le nouveau mot de passe dans les deux champs.',
    changing: 'Modification…',
    changed: 'Mot de passe changé',
    changedText: 'Votre mot de passe a été changé. Vous pouvez maintenant vous connecter avec.',
    signedOutEverywhere:
      'Par sécurité, toutes les sessions de votre compte ont été déconnectées, sur tous vos appareils.',
    failed: 'Un problème est survenu, et votre mot de passe n’a peut-être pas été changé.',
    failedHint: 'Réessayez dans un instant. Si le problème persiste, demandez un nouveau lien.',
    signInNow: 'Se connecter avec le nouveau mot de passe',
  },
  verifyEmail: {
    title: 'Confirmez votre adresse e-mail',
    noscript: 'Cette page a besoin de JavaScript pour confirmer votre adresse e-mail.',
    confirming: 'Confirmation de votre adresse e-mail…',
    confirmed: 'Adresse e-mail confirmée',
    confirmedText: 'Votre adresse e-mail est confirmée.',
    closePage: 'Vous pouvez fermer cette page.',
    expired: 'Ce lien a expiré ou a déjà été utilisé.',
    expiredHint: 'Si votre adresse n’est pas encore confirmée, connectez-vous et demandez un nouveau lien.',
    failed:
      'Un problème est survenu, et votre adresse n’est pas encore confirmée. Réessayez dans un instant.',
  },
};

// Español neutro, tuteando como en los correos.
const es: RecoveryPageTexts = {
  resetPassword: {
    title: 'Elige una contraseña nueva',
    newPassword: 'Contraseña nueva',
    newPasswordAgain: 'Repite la contraseña nueva',
    showPasswords: 'Mostrar las contraseñas',
    passwordHint: 'Al menos 8 caracteres. No se aceptan contraseñas muy comunes.',
    changePassword: 'Cambiar la contraseña',
    noscript: 'Esta página necesita JavaScript para cambiar tu contraseña.',
    expired: 'Este enlace ha caducado o ya se ha usado. Solicita uno nuevo.',
    passwordRefused:
      'Esta contraseña no es válida: debe tener al menos 8 caracteres y no puede ser una contraseña muy común.',
    typePassword: 'Escribe tu contraseña nueva.',
    notSame: 'Las dos contraseñas no coinciden. Vuelve a escribir la contraseña nueva en ambos campos.',
    changing: 'Cambiando…',
    changed: 'Contraseña cambiada',
    changedText: 'Se ha cambiado tu contraseña. Ya puedes iniciar sesión con ella.',
    signedOutEverywhere:
      'Por tu seguridad, se han cerrado todas las sesiones de tu cuenta en todos los dispositivos.',
    failed: 'Algo ha fallado y es posible que tu contraseña no se haya cambiado.',
    failedHint: 'Vuelve a intentarlo dentro de un momento. Si sigue fallando, solicita un enlace nuevo.',
    signInNow: 'Iniciar sesión con la contraseña nueva',
  },
  verifyEmail: {
    title: 'Confirma tu dirección de correo electrónico',
    noscript: 'Esta página necesita JavaScript para confirmar tu dirección de correo electrónico.',
    confirming: 'Confirmando tu dirección de correo electrónico…',
    confirmed: 'Dirección de correo confirmada',
    confirmedText: 'Tu dirección de correo electrónico está confirmada.',
    closePage: 'Ya puedes cerrar esta página.',
    expired: 'Este enlace ha caducado o ya se ha usado.',
    expiredHint: 'Si tu dirección aún no está confirmada, inicia sesión y solicita un enlace nuevo.',
    failed:
      'Algo ha fallado y tu dirección aún no está confirmada. Vuelve a intentarlo dentro de un momento.',
  },
};

/** The feature's `pageTexts` (its feature.ts): every language, each with the English groups and keys. */
export const recoveryPageTexts: PageTextsByLocale<RecoveryPageTexts> = { en, de, fr, es };
