// Deutsch, in der Sie-Form, wie ein Dienst seine Kundschaft anschreibt. Nach der Anrede mit Komma
// beginnt der erste Satz klein (außer mit einem Substantiv oder „Sie“/„Ihr“), wie in einem Brief.
import type { MailCatalog } from '../catalog.ts';

const IGNORE =
  'Falls Sie das nicht angefordert haben, können Sie diese Nachricht ignorieren; solange der Link nicht verwendet wird, ändert sich nichts.';
const NOT_YOU =
  'Falls Sie das nicht waren, setzen Sie Ihr Passwort jetzt über „Passwort vergessen“ zurück und melden Sie Ihre anderen Sitzungen ab.';
const NOT_YOU_FACTOR =
  'Falls Sie das nicht waren, kennt jemand Ihr Passwort: Setzen Sie es jetzt über „Passwort vergessen“ zurück und melden Sie Ihre anderen Sitzungen ab.';
const WHEN = 'Dies geschah am {at, date, long} um {at, time, short}.';

export const de: MailCatalog = {
  greeting: '{hasName, select, yes {Guten Tag {name},} other {Guten Tag,}}',
  linkLine: '{action}:\n{url}',
  closing: '— Usher',
  messages: {
    passwordReset: {
      subject: 'Setzen Sie Ihr Passwort zurück',
      body: `jemand möchte das Passwort des Kontos mit dieser E-Mail-Adresse zurücksetzen.

Über den Link unten können Sie ein neues Passwort wählen. Er funktioniert nur einmal und ist {validity} lang gültig.

${IGNORE}`,
      action: 'Neues Passwort wählen',
    },
    verifyEmail: {
      subject: 'Bestätigen Sie Ihre E-Mail-Adresse',
      body: `bitte bestätigen Sie, dass diese E-Mail-Adresse zu Ihrem Konto gehört.

Der Link unten funktioniert nur einmal und ist {validity} lang gültig.

${IGNORE}`,
      action: 'E-Mail-Adresse bestätigen',
    },
    passkeyAdded: {
      subject: 'Ihrem Konto wurde ein Passkey hinzugefügt',
      body: `{hasPasskeyName, select, yes {Ihrem Konto wurde soeben der Passkey „{passkeyName}“ hinzugefügt} other {Ihrem Konto wurde soeben ein Passkey hinzugefügt}}; damit ist eine Anmeldung ohne Ihr Passwort möglich. ${WHEN}

Falls Sie das nicht waren, entfernen Sie ihn jetzt auf Ihrer Kontoseite und setzen Sie Ihr Passwort zurück.`,
    },
    passkeyRemoved: {
      subject: 'Aus Ihrem Konto wurde ein Passkey entfernt',
      body: `{hasPasskeyName, select, yes {der Passkey „{passkeyName}“ wurde} other {ein Passkey wurde}} soeben aus Ihrem Konto entfernt und ermöglicht keine Anmeldung mehr. ${WHEN}

${NOT_YOU}`,
    },
    identityLinked: {
      subject: 'Ein {provider}-Konto wurde mit Ihrem Konto verknüpft',
      body: `ein {provider}-Konto wurde soeben mit Ihrem Konto verknüpft; darüber ist jetzt eine Anmeldung bei Ihrem Konto möglich. ${WHEN}

Falls Sie das nicht waren, heben Sie die Verknüpfung jetzt auf Ihrer Kontoseite auf und setzen Sie Ihr Passwort zurück.`,
    },
    identityUnlinked: {
      subject: 'Ein {provider}-Konto wurde von Ihrem Konto getrennt',
      body: `ein {provider}-Konto wurde soeben von Ihrem Konto getrennt; darüber ist keine Anmeldung bei Ihrem Konto mehr möglich. ${WHEN}

${NOT_YOU}`,
    },
    accountDeleted: {
      subject: 'Ihr Konto wurde gelöscht',
      body: `Ihr Konto wurde soeben gelöscht, samt allen Sitzungen, Passkeys, Produkten und Bewertungen. ${WHEN} Sie erhalten an diese Adresse keine weiteren Nachrichten zu diesem Konto.

Falls Sie das nicht waren, kannte jemand Ihr Passwort oder nutzte eine kürzliche Anmeldung auf einem Ihrer Geräte. Ein gelöschtes Konto lässt sich nicht wiederherstellen, aber mit dieser Adresse können Sie sich erneut registrieren.`,
    },
    passwordChanged: {
      subject: 'Ihr Passwort wurde geändert',
      body: `das Passwort Ihres Kontos wurde soeben geändert. ${WHEN}

${NOT_YOU}`,
    },
    emailChanged: {
      subject: 'Die E-Mail-Adresse Ihres Kontos wurde geändert',
      body: `{hasNewEmail, select, yes {die E-Mail-Adresse Ihres Kontos wurde soeben von dieser Adresse in {newEmail} geändert.} other {die E-Mail-Adresse Ihres Kontos wurde soeben von dieser Adresse in eine andere geändert.}} ${WHEN}

Nachrichten zu Ihrem Konto gehen ab sofort an die neue Adresse.

${NOT_YOU}`,
    },
    test: {
      subject: 'Testnachricht von Usher',
      body: 'dies ist eine Testnachricht von Usher: Der E-Mail-Versand funktioniert.',
    },
    totpEnabled: {
      subject: 'Die Zwei-Faktor-Authentifizierung wurde aktiviert',
      body: `für Ihr Konto wurde am {at, date, long} um {at, time, short} die Zwei-Faktor-Authentifizierung aktiviert. Zur Anmeldung brauchen Sie jetzt zusätzlich zu Ihrem Passwort einen Code aus Ihrer Authenticator-App.

Bewahren Sie Ihre Wiederherstellungscodes an einem sicheren Ort auf: Mit jedem davon können Sie sich einmal anmelden, falls Sie die App verlieren.

${NOT_YOU_FACTOR}`,
    },
    totpDisabled: {
      subject: 'Die Zwei-Faktor-Authentifizierung wurde deaktiviert',
      body: `für Ihr Konto wurde am {at, date, long} um {at, time, short} die Zwei-Faktor-Authentifizierung deaktiviert. Zur Anmeldung genügt jetzt Ihr Passwort; Ihre Wiederherstellungscodes sind nicht mehr gültig.

${NOT_YOU_FACTOR}`,
    },
    recoveryCodeUsed: {
      subject: 'Anmeldung mit einem Wiederherstellungscode',
      body: `am {at, date, long} um {at, time, short} hat sich jemand mit Ihrem Passwort und einem Ihrer Wiederherstellungscodes bei Ihrem Konto angemeldet.

Dieser Code funktioniert kein zweites Mal; {left, plural, =0 {Sie haben keine unbenutzten Wiederherstellungscodes mehr} one {Sie haben noch # unbenutzten Wiederherstellungscode} other {Sie haben noch # unbenutzte Wiederherstellungscodes}}. Neue Codes erhalten Sie, indem Sie die Zwei-Faktor-Authentifizierung aus- und wieder einschalten.

${NOT_YOU_FACTOR}`,
    },
    secondFactorFailures: {
      subject: 'Ihr Passwort wurde mit falschen Anmeldecodes verwendet',
      body: `jemand hat sich mit Ihrem Passwort angemeldet und danach {failures, plural, one {# falschen Code} other {# falsche Codes hintereinander}} aus Ihrer Authenticator-App eingegeben. Die Zwei-Faktor-Authentifizierung hat die Anmeldung verhindert, und weitere Codes werden jetzt erst nach einer wachsenden Wartezeit geprüft. ${WHEN}

Falls Sie das nicht waren, kennt jemand Ihr Passwort: Ändern Sie es jetzt (auch das Zurücksetzen des Passworts ist möglich), damit niemand weiter probieren kann. Die Anmeldung von einem Gerät, das Sie schon einmal verwendet haben, funktioniert weiterhin.`,
    },
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
};
