// Every message Usher sends: a subject that says what it is, and a plain-text and an HTML part
// with the same content and the link written out in full, in the recipient's language. The mails
// and their texts are the features' (each declares its own, catalog.ts's defineMails), laid out
// here between the lines every mail shares (texts/*.ts), as ICU MessageFormat formatted by
// FormatJS's intl-messageformat: plurals, selects and dates by CLDR's rules for the language,
// never pieced together here. An operator's own texts and templates (MAIL_TEMPLATES_DIR,
// operator-templates.ts) come before Usher's.
//
// Every value put into HTML is escaped: a user's name is whatever they typed at registration.
// Text a user chose (their name, a passkey's name, their new address) is passed only for mail to
// an address proven theirs (account-mail.ts, and the senders): `undefined` leaves it out.
import type { MessageFormatElement } from '@formatjs/icu-messageformat-parser';
import { LookupSupportedLocales } from '@formatjs/intl-localematcher';
import { type Formats, IntlMessageFormat } from 'intl-messageformat';
import { BUILT_IN_LOCALES, type BuiltInLocale, bestLocale, preferredLocale } from '../shared/locale.ts';
import {
  COMMON_PARTS,
  type CommonPart,
  type Mail,
  type MailDefinition,
  type MailLayout,
  PARSE_OPTIONS,
  parseText,
  presence,
  type Recipient,
} from './catalog.ts';
import {
  type CheckedLocale,
  checkOperatorTemplates,
  NO_OPERATOR_TEMPLATES,
  type OperatorTemplates,
} from './operator-templates.ts';
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

/** The lines every mail shares, in each language Usher ships. */
export const BUILT_IN_LAYOUTS: Record<BuiltInLocale, MailLayout> = { en, de, fr, es };

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
 * The mails the features declared, with their texts in force: Usher's own, and an operator's over
 * them. One per app, from the declarations and the configuration: `MailService.templates`.
 */
export class MailTemplates {
  readonly #operator: Record<string, CheckedLocale>;
  readonly #now: () => number;
  /** By kind, every mail declared. */
  readonly #mails: ReadonlyMap<string, MailDefinition>;
  /** Every language there are texts for: Usher's, then the operator's own. */
  readonly locales: readonly string[];
  /** Per mail, the languages it can be written in. */
  readonly #available: ReadonlyMap<string, readonly string[]>;
  readonly #parsed = new Map<string, MessageFormatElement[]>();

  /**
   * Throws on a mail declared twice (two features, one kind) or declared without its texts, and
   * TemplateError on an operator's file that does not fit the mails (operator-templates.ts).
   */
  constructor(
    mails: readonly MailDefinition[],
    operator: OperatorTemplates = NO_OPERATOR_TEMPLATES,
    options: { now?: () => number } = {},
  ) {
    const byKind = new Map<string, MailDefinition>();
    for (const mail of mails) {
      const earlier = byKind.get(mail.kind);
      if (earlier !== undefined)
        throw new Error(
          `the mail "${mail.kind}" is declared twice, by ${earlier.feature} and by ${mail.feature}: a mail's kind names it in operators' templates, so it must be unique`,
        );
      for (const language of BUILT_IN_LOCALES) {
        const texts = mail.texts[language] as MailDefinition['texts'][BuiltInLocale] | undefined;
        if (texts === undefined)
          throw new Error(`${mail.feature}'s mail "${mail.kind}" has no ${language} texts`);
        if ((texts.action !== undefined) !== mail.link)
          throw new Error(
            `${mail.feature}'s mail "${mail.kind}" (${language}): an action, the link's label, goes with a link and only with one`,
          );
      }
      byKind.set(mail.kind, mail);
    }
    this.#mails = byKind;
    this.#operator = checkOperatorTemplates(operator, byKind);
    this.#now = options.now ?? Date.now;
    const added = Object.keys(operator.locales).filter(
      (locale) => !(BUILT_IN_LOCALES as readonly string[]).includes(locale),
    );
    this.locales = [...BUILT_IN_LOCALES, ...added];
    this.#available = new Map(
      [...byKind.keys()].map((kind) => [
        kind,
        [
          ...BUILT_IN_LOCALES,
          ...added.filter((locale) => this.#operator[locale]?.messages[kind] !== undefined),
        ],
      ]),
    );
  }

  /** Every mail declared, in the order given. */
  get mails(): readonly MailDefinition[] {
    return [...this.#mails.values()];
  }

  /**
   * The locale to keep for someone whose browser sent this Accept-Language: the first language it
   * asks for that there are texts for, or undefined (then the account keeps the default, en).
   */
  localeFor(acceptLanguage: string | undefined): string | undefined {
    return preferredLocale(acceptLanguage, this.locales);
  }

  /** The mail as declared; throws for one this app was not given (a sender left out of the list). */
  #declared(mail: MailDefinition): MailDefinition {
    if (this.#mails.get(mail.kind) !== mail)
      throw new Error(`the mail "${mail.kind}" (${mail.feature}) is not among the mails this app was given`);
    return mail;
  }

  /** The language `mail` is written in for someone whose locale is `locale`: de-AT → de, unknown → en. */
  languageOf(mail: MailDefinition, locale: string): string {
    const available = this.#available.get(this.#declared(mail).kind)!;
    return bestLocale(typeof locale === 'string' ? [locale] : [], available);
  }

  #elements(language: string, id: string, part: string, source: string): MessageFormatElement[] {
    const key = `${language}\u0000${id}\u0000${part}`;
    let elements = this.#parsed.get(key);
    if (elements === undefined) {
      elements = parseText(source);
      this.#parsed.set(key, elements);
    }
    return elements;
  }

  /**
   * `mail` to `to`, with its values: what the mail's sender passes. Optional variables give their
   * `hasX`; a lifetime (`ttlMs`) gives the validity arguments, written in the mail's language.
   */
  compose<V>(mail: Mail<V>, to: Recipient, values: NoInfer<V>): OutgoingMessage {
    const given = values as Record<string, unknown>;
    const args: Values = {};
    if (mail.link) args.url = given.url as string;
    for (const [name, kind] of Object.entries(mail.variables)) {
      const value = given[name] as string | number | undefined;
      if (kind === 'optional') {
        args[name] = value ?? '';
        args[presence(name)] = value === undefined ? 'no' : 'yes';
      } else args[name] = value as string | number;
    }
    if (mail.lifetime) Object.assign(args, this.#lifetime(mail, to.locale, given.ttlMs as number));
    return this.render(mail, to.email, to.locale, to.name, args);
  }

  /** One message in the language that best matches `locale` (formattingLocale for dates and numbers). */
  render(
    mail: MailDefinition,
    to: string,
    locale: string,
    name: string | undefined,
    values: Values,
  ): OutgoingMessage {
    const id = mail.kind;
    const language = this.languageOf(mail, locale);
    const formatting = formattingLocale(language, locale);
    const own = this.#operator[language];
    const mine = own?.messages[id];
    const shipped = mail.texts[language as BuiltInLocale] as
      | MailDefinition['texts'][BuiltInLocale]
      | undefined;
    const layout = BUILT_IN_LAYOUTS[language as BuiltInLocale] as MailLayout | undefined;
    const text = (part: 'subject' | 'body' | 'action' | CommonPart): string => {
      const source =
        part === 'greeting' || part === 'linkLine' || part === 'closing'
          ? (own?.common[part] ?? layout?.[part])
          : (mine?.[part] ?? shipped?.[part]);
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
    const label = mail.link ? format('action', text('action'), all) : undefined;
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
  #lifetime(mail: MailDefinition, locale: string, ttlMs: number): Values {
    const { amount, unit } = validity(ttlMs);
    const formatting = formattingLocale(this.languageOf(mail, locale), locale);
    return {
      validity: new Intl.NumberFormat(formatting, { style: 'unit', unit, unitDisplay: 'long' }).format(
        amount,
      ),
      ttlAmount: amount,
      ttlUnit: unit,
      expiresAt: new Date(this.#now() + ttlMs),
    };
  }
}
