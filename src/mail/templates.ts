// Every message Usher sends: a subject that says what it is, and a plain-text and an HTML part
// with the same content and the link written out in full, in the recipient's language. The texts
// are ICU MessageFormat catalogs (texts/*.ts; catalog.ts says what each message is made of),
// formatted by FormatJS's intl-messageformat: plurals, selects and dates by CLDR's rules for the
// language, never pieced together here. An operator's own texts and templates (MAIL_TEMPLATES_DIR,
// operator-templates.ts) come before Usher's.
//
// Every value put into HTML is escaped: a user's name is whatever they typed at registration.
// Text a user chose (their name, a passkey's name, their new address) is passed only for mail to
// an address proven theirs (account-mail.ts): `undefined` leaves it out.
import type { MessageFormatElement } from '@formatjs/icu-messageformat-parser';
import { LookupSupportedLocales } from '@formatjs/intl-localematcher';
import { type Formats, IntlMessageFormat } from 'intl-messageformat';
import { BUILT_IN_LOCALES, type BuiltInLocale, bestLocale, preferredLocale } from '../shared/locale.ts';
import {
  COMMON_PARTS,
  type CommonPart,
  type MailCatalog,
  MESSAGE_IDS,
  MESSAGE_SPECS,
  type MessageId,
  PARSE_OPTIONS,
  parseText,
} from './catalog.ts';
import { NO_OPERATOR_TEMPLATES, type OperatorTemplates } from './operator-templates.ts';
import type { OutgoingMessage } from './repository.ts';
import { de } from './texts/de.ts';
import { en } from './texts/en.ts';
import { es } from './texts/es.ts';
import { fr } from './texts/fr.ts';

const HTML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

export const BUILT_IN_CATALOGS: Record<BuiltInLocale, MailCatalog> = { en, de, fr, es };

/**
 * Dates and times in mails are in UTC, and a time says so ("14:05 UTC"): an account has no time
 * zone, and a time without one would be read in the reader's own.
 */
const UTC_FORMATS: Partial<Formats> = (() => {
  const { date, time } = IntlMessageFormat.formats;
  const utc = <T extends object>(formats: Record<string, T>, extra: object = {}) =>
    Object.fromEntries(
      Object.entries(formats).map(([name, format]) => [name, { ...format, ...extra, timeZone: 'UTC' }]),
    );
  return { date: utc(date), time: utc(time, { timeZoneName: 'short' }) };
})();

type Values = Record<string, string | number | Date>;

/** A link's or code's lifetime, in the largest whole unit: 7 days, 24 hours, 90 minutes. */
function validity(ttlMs: number): { amount: number; unit: 'minute' | 'hour' | 'day' } {
  const minutes = Math.max(1, Math.round(ttlMs / 60_000));
  if (minutes % 1440 === 0) return { amount: minutes / 1440, unit: 'day' };
  if (minutes % 60 === 0) return { amount: minutes / 60, unit: 'hour' };
  return { amount: minutes, unit: 'minute' };
}

/**
 * The locale dates and numbers are written for: the reader's own when it is a variant of the
 * language the message is in (en-GB: 27 November 2026, in English texts), else that language's
 * (a Japanese date format has no place in an English mail).
 */
function formattingLocale(language: string, locale: string): string {
  return typeof locale === 'string' && LookupSupportedLocales([language], [locale]).length > 0
    ? locale
    : language;
}

/** Left to right unless the language is written right to left (an operator's Arabic or Hebrew). */
function direction(locale: string): 'ltr' | 'rtl' {
  try {
    const info = new Intl.Locale(locale) as Intl.Locale & { getTextInfo?: () => { direction?: string } };
    return info.getTextInfo?.().direction === 'rtl' ? 'rtl' : 'ltr';
  } catch {
    return 'ltr';
  }
}

/** Plain text as HTML paragraphs: escaped, a blank line between paragraphs, `url` made a link. */
function textAsHtml(text: string, url: string | undefined): string[] {
  const link = url === undefined ? undefined : escapeHtml(url);
  return text
    .split(/\n{2,}/)
    .map((paragraph) => paragraph.trim())
    .filter((paragraph) => paragraph !== '')
    .map((paragraph) => {
      let html = escapeHtml(paragraph).replaceAll('\n', '<br>');
      if (link !== undefined) html = html.replaceAll(link, `<a href="${link}">${link}</a>`);
      return `<p>${html}</p>`;
    });
}

function htmlDocument(locale: string, body: string[]): string {
  return [
    '<!doctype html>',
    `<html lang="${escapeHtml(locale)}" dir="${direction(locale)}"><body style="font-family: sans-serif; line-height: 1.5; color: #1f2328">`,
    ...body,
    '</body></html>',
    '',
  ].join('\n');
}

/**
 * The catalogs in force: Usher's own, and an operator's over them. One per app, from its
 * configuration: `MailService.templates` is the one to use (the functions below this class write
 * Usher's own texts only).
 */
export class MailTemplates {
  readonly #operator: OperatorTemplates;
  readonly #now: () => number;
  /** Every language there are texts for: Usher's, then the operator's own. */
  readonly locales: readonly string[];
  /** Per message, the languages it can be written in. */
  readonly #available: Record<MessageId, readonly string[]>;
  readonly #parsed = new Map<string, MessageFormatElement[]>();

  constructor(operator: OperatorTemplates = NO_OPERATOR_TEMPLATES, options: { now?: () => number } = {}) {
    this.#operator = operator;
    this.#now = options.now ?? Date.now;
    const added = Object.keys(operator.locales).filter(
      (locale) => !(BUILT_IN_LOCALES as readonly string[]).includes(locale),
    );
    this.locales = [...BUILT_IN_LOCALES, ...added];
    this.#available = Object.fromEntries(
      MESSAGE_IDS.map((id) => [
        id,
        [
          ...BUILT_IN_LOCALES,
          ...added.filter((locale) => operator.locales[locale]?.messages[id] !== undefined),
        ],
      ]),
    ) as unknown as Record<MessageId, readonly string[]>;
  }

  /**
   * The locale to keep for someone whose browser sent this Accept-Language: the first language it
   * asks for that there are texts for, or undefined (then the account keeps the default, en).
   */
  localeFor(acceptLanguage: string | undefined): string | undefined {
    return preferredLocale(acceptLanguage, this.locales);
  }

  /** The language `id` is written in for someone whose locale is `locale`: de-AT → de, unknown → en. */
  languageOf(id: MessageId, locale: string): string {
    return bestLocale(typeof locale === 'string' ? [locale] : [], this.#available[id]);
  }

  #elements(
    language: string,
    id: MessageId | 'common',
    part: string,
    source: string,
  ): MessageFormatElement[] {
    const key = `${language}\u0000${id}\u0000${part}`;
    let elements = this.#parsed.get(key);
    if (elements === undefined) {
      elements = parseText(source);
      this.#parsed.set(key, elements);
    }
    return elements;
  }

  /** One message in the language that best matches `locale` (formattingLocale for dates and numbers). */
  render(
    id: MessageId,
    to: string,
    locale: string,
    name: string | undefined,
    values: Values,
  ): OutgoingMessage {
    const language = this.languageOf(id, locale);
    const formatting = formattingLocale(language, locale);
    const own = this.#operator.locales[language];
    const mine = own?.messages[id];
    const shipped = BUILT_IN_CATALOGS[language as BuiltInLocale] as MailCatalog | undefined;
    const text = (part: 'subject' | 'body' | 'action' | CommonPart): string => {
      const source =
        part === 'greeting' || part === 'linkLine' || part === 'closing'
          ? (own?.common[part] ?? shipped?.[part])
          : (mine?.[part] ?? shipped?.messages[id][part]);
      // The operator's files were checked at start to be whole wherever Usher has no texts.
      if (source === undefined) throw new Error(`no ${part} for ${id} in ${language}`);
      return source;
    };
    const format = (part: string, source: string, args: Values): string =>
      new IntlMessageFormat(
        this.#elements(
          language,
          (COMMON_PARTS as readonly string[]).includes(part) ? 'common' : id,
          part,
          source,
        ),
        formatting,
        UTC_FORMATS,
        PARSE_OPTIONS,
      ).format<string>(args) as string;

    const all: Values = {
      name: name ?? '',
      hasName: name === undefined ? 'no' : 'yes',
      email: to,
      at: new Date(this.#now()),
      ...values,
    };
    const url = typeof values.url === 'string' ? values.url : undefined;
    // One line: a line break in a subject would end the header.
    const subject = format('subject', text('subject'), all)
      .replace(/\s*[\r\n]+\s*/g, ' ')
      .trim();

    if (mine?.text !== undefined) {
      const plain = format('text', mine.text, all);
      const escaped = Object.fromEntries(
        Object.entries(all).map(([key, value]) => [
          key,
          typeof value === 'string' ? escapeHtml(value) : value,
        ]),
      );
      const html =
        mine.html !== undefined
          ? format('html', mine.html, escaped)
          : htmlDocument(language, textAsHtml(plain, url));
      return { to, subject, text: plain.endsWith('\n') ? plain : `${plain}\n`, html };
    }

    const greeting = format('greeting', text('greeting'), all);
    const paragraphs = format('body', text('body'), all)
      .split(/\n{2,}/)
      .map((p) => p.trim())
      .filter((p) => p !== '');
    const label = MESSAGE_SPECS[id].link ? format('action', text('action'), all) : undefined;
    const linkLine =
      label !== undefined && url !== undefined
        ? format('linkLine', text('linkLine'), { ...all, action: label, url })
        : undefined;
    const closing = format('closing', text('closing'), all);
    const plain = [
      greeting,
      '',
      ...paragraphs.flatMap((p) => [p, '']),
      ...(linkLine !== undefined ? [linkLine, ''] : []),
      closing,
      '',
    ].join('\n');
    const html = htmlDocument(language, [
      `<p>${escapeHtml(greeting)}</p>`,
      ...paragraphs.map((p) => `<p>${escapeHtml(p).replaceAll('\n', '<br>')}</p>`),
      ...(label !== undefined && url !== undefined
        ? [
            `<p><a href="${escapeHtml(url)}">${escapeHtml(label)}</a></p>`,
            `<p style="word-break: break-all">${escapeHtml(url)}</p>`,
          ]
        : []),
      `<p>${escapeHtml(closing).replaceAll('\n', '<br>')}</p>`,
    ]);
    return { to, subject, text: plain, html };
  }

  /** The arguments of a link's or code's lifetime (catalog.ts), `validity` written in `locale`'s language. */
  #lifetime(id: MessageId, locale: string, ttlMs: number): Values {
    const { amount, unit } = validity(ttlMs);
    const formatting = formattingLocale(this.languageOf(id, locale), locale);
    return {
      validity: new Intl.NumberFormat(formatting, { style: 'unit', unit, unitDisplay: 'long' }).format(
        amount,
      ),
      ttlAmount: amount,
      ttlUnit: unit,
      expiresAt: new Date(this.#now() + ttlMs),
    };
  }

  passwordResetMessage(
    to: string,
    name: string | undefined,
    url: string,
    ttlMs: number,
    locale: string,
  ): OutgoingMessage {
    return this.render('passwordReset', to, locale, name, {
      url,
      ...this.#lifetime('passwordReset', locale, ttlMs),
    });
  }

  /** Always to an address nobody has proven yet: nothing in it is the registrant's text. */
  verifyEmailMessage(to: string, url: string, ttlMs: number, locale: string): OutgoingMessage {
    return this.render('verifyEmail', to, locale, undefined, {
      url,
      ...this.#lifetime('verifyEmail', locale, ttlMs),
    });
  }

  passkeyAddedMessage(
    to: string,
    name: string | undefined,
    passkeyName: string | undefined,
    locale: string,
  ): OutgoingMessage {
    return this.render('passkeyAdded', to, locale, name, {
      passkeyName: passkeyName ?? '',
      hasPasskeyName: passkeyName === undefined ? 'no' : 'yes',
    });
  }

  identityLinkedMessage(
    to: string,
    name: string | undefined,
    provider: string,
    locale: string,
  ): OutgoingMessage {
    return this.render('identityLinked', to, locale, name, { provider });
  }

  identityUnlinkedMessage(
    to: string,
    name: string | undefined,
    provider: string,
    locale: string,
  ): OutgoingMessage {
    return this.render('identityUnlinked', to, locale, name, { provider });
  }

  passkeyRemovedMessage(
    to: string,
    name: string | undefined,
    passkeyName: string | undefined,
    locale: string,
  ): OutgoingMessage {
    return this.render('passkeyRemoved', to, locale, name, {
      passkeyName: passkeyName ?? '',
      hasPasskeyName: passkeyName === undefined ? 'no' : 'yes',
    });
  }

  accountDeletedMessage(to: string, name: string | undefined, locale: string): OutgoingMessage {
    return this.render('accountDeleted', to, locale, name, {});
  }

  passwordChangedMessage(to: string, name: string | undefined, locale: string): OutgoingMessage {
    return this.render('passwordChanged', to, locale, name, {});
  }

  emailChangedMessage(
    to: string,
    name: string | undefined,
    newEmail: string | undefined,
    locale: string,
  ): OutgoingMessage {
    return this.render('emailChanged', to, locale, name, {
      newEmail: newEmail ?? '',
      hasNewEmail: newEmail === undefined ? 'no' : 'yes',
    });
  }

  testMessage(to: string, locale: string): OutgoingMessage {
    return this.render('test', to, locale, undefined, {});
  }

  totpEnabledMessage(to: string, name: string | undefined, locale: string): OutgoingMessage {
    return this.render('totpEnabled', to, locale, name, {});
  }

  totpDisabledMessage(to: string, name: string | undefined, locale: string): OutgoingMessage {
    return this.render('totpDisabled', to, locale, name, {});
  }

  recoveryCodeUsedMessage(
    to: string,
    name: string | undefined,
    left: number,
    locale: string,
  ): OutgoingMessage {
    return this.render('recoveryCodeUsed', to, locale, name, { left });
  }

  secondFactorFailuresMessage(
    to: string,
    name: string | undefined,
    failures: number,
    locale: string,
  ): OutgoingMessage {
    return this.render('secondFactorFailures', to, locale, name, { failures });
  }

  /**
   * An admin's invitation (CONTRACT "Administration"): a link to choose the account's first
   * password. The name is the admin's choice, not a stranger's, so it may be used to greet.
   */
  invitationMessage(to: string, name: string, url: string, ttlMs: number, locale: string): OutgoingMessage {
    return this.render('invitation', to, locale, name, {
      url,
      ...this.#lifetime('invitation', locale, ttlMs),
    });
  }

  /** Support staff removed the account's second factors (the owner lost them). */
  secondFactorsRemovedMessage(to: string, name: string | undefined, locale: string): OutgoingMessage {
    return this.render('secondFactorsRemoved', to, locale, name, {});
  }

  /**
   * A sign-in link (CONTRACT "Sign-in by mail"). `name` is undefined for an address not proven yet,
   * and for an address with no account (EMAIL_SIGNIN_CREATES_ACCOUNTS): using the link proves it.
   */
  signinLinkMessage(
    to: string,
    name: string | undefined,
    url: string,
    ttlMs: number,
    locale: string,
  ): OutgoingMessage {
    return this.render('signinLink', to, locale, name, {
      url,
      ...this.#lifetime('signinLink', locale, ttlMs),
    });
  }

  /** A sign-in code: the same rules for `name` as signinLinkMessage. */
  signinCodeMessage(
    to: string,
    name: string | undefined,
    code: string,
    ttlMs: number,
    locale: string,
  ): OutgoingMessage {
    return this.render('signinCode', to, locale, name, {
      code,
      ...this.#lifetime('signinCode', locale, ttlMs),
    });
  }
}

/** Usher's own texts, without an operator's: what the functions below write. */
const USHER = new MailTemplates();

// Usher's own texts, message by message, for callers without the configured catalog at hand (it
// is `MailService.templates`: use that one, or an operator's texts are passed over).
export const passwordResetMessage: MailTemplates['passwordResetMessage'] = (...args) =>
  USHER.passwordResetMessage(...args);
export const verifyEmailMessage: MailTemplates['verifyEmailMessage'] = (...args) =>
  USHER.verifyEmailMessage(...args);
export const passkeyAddedMessage: MailTemplates['passkeyAddedMessage'] = (...args) =>
  USHER.passkeyAddedMessage(...args);
export const passkeyRemovedMessage: MailTemplates['passkeyRemovedMessage'] = (...args) =>
  USHER.passkeyRemovedMessage(...args);
export const identityLinkedMessage: MailTemplates['identityLinkedMessage'] = (...args) =>
  USHER.identityLinkedMessage(...args);
export const identityUnlinkedMessage: MailTemplates['identityUnlinkedMessage'] = (...args) =>
  USHER.identityUnlinkedMessage(...args);
export const accountDeletedMessage: MailTemplates['accountDeletedMessage'] = (...args) =>
  USHER.accountDeletedMessage(...args);
export const passwordChangedMessage: MailTemplates['passwordChangedMessage'] = (...args) =>
  USHER.passwordChangedMessage(...args);
export const emailChangedMessage: MailTemplates['emailChangedMessage'] = (...args) =>
  USHER.emailChangedMessage(...args);
export const testMessage: MailTemplates['testMessage'] = (...args) => USHER.testMessage(...args);
export const totpEnabledMessage: MailTemplates['totpEnabledMessage'] = (...args) =>
  USHER.totpEnabledMessage(...args);
export const totpDisabledMessage: MailTemplates['totpDisabledMessage'] = (...args) =>
  USHER.totpDisabledMessage(...args);
export const recoveryCodeUsedMessage: MailTemplates['recoveryCodeUsedMessage'] = (...args) =>
  USHER.recoveryCodeUsedMessage(...args);
export const secondFactorFailuresMessage: MailTemplates['secondFactorFailuresMessage'] = (...args) =>
  USHER.secondFactorFailuresMessage(...args);
export const invitationMessage: MailTemplates['invitationMessage'] = (...args) =>
  USHER.invitationMessage(...args);
export const secondFactorsRemovedMessage: MailTemplates['secondFactorsRemovedMessage'] = (...args) =>
  USHER.secondFactorsRemovedMessage(...args);
export const signinLinkMessage: MailTemplates['signinLinkMessage'] = (...args) =>
  USHER.signinLinkMessage(...args);
export const signinCodeMessage: MailTemplates['signinCodeMessage'] = (...args) =>
  USHER.signinCodeMessage(...args);
