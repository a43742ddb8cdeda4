// Usher's pages in the browser's language (CONTRACT "Languages"): each page's HTML is a template
// whose {{key}} places take its texts, rendered once per language at start, and the one for a
// request is chosen by its Accept-Language (Vary: Accept-Language; Content-Language). The texts
// a page's script shows go in the same document, in a JSON data block: inert, so the pages' CSP,
// which runs no inline script, stays as it is, and nothing more is fetched.
import { acceptedLocales, BUILT_IN_LOCALES, type BuiltInLocale, bestLocale } from '../shared/locale.ts';
import { de } from './texts/de.ts';
import { en, type PageTexts } from './texts/en.ts';
import { es } from './texts/es.ts';
import { fr } from './texts/fr.ts';

export type { PageTexts } from './texts/en.ts';
export type TextGroup = keyof PageTexts;

export const PAGE_TEXTS: Record<BuiltInLocale, PageTexts> = { en, de, fr, es };

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};
export const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);

/**
 * The language a page is shown in: the best match of `preferred` (an OpenID Connect request's
 * ui_locales, most wanted first), then of the browser's Accept-Language, among Usher's: de-AT → de.
 */
export function pageLocale(
  acceptLanguage: string | undefined,
  preferred: readonly string[] = [],
): BuiltInLocale {
  return bestLocale([...preferred, ...acceptedLocales(acceptLanguage)], BUILT_IN_LOCALES) as BuiltInLocale;
}

/** The texts of `groups` in `locale`, as one map (a later group's key wins). */
export function textsOf(locale: BuiltInLocale, groups: readonly TextGroup[]): Record<string, string> {
  return Object.assign({}, ...groups.map((group) => PAGE_TEXTS[locale][group])) as Record<string, string>;
}

/** `{name}` places of a text filled, each value escaped: for the pages rendered whole on the server. */
export function fill(text: string, values: Record<string, string>): string {
  return escapeHtml(text).replace(/\{(\w+)\}/g, (whole, name: string) =>
    name in values ? escapeHtml(values[name]!) : whole,
  );
}

/** A template's language, English in the file (its texts' keys are English words' places). */
const HTML_LANG = /<html lang="[^"]*">/;
/** The texts block of a page template: empty in the file, filled in each language. */
const TEXTS_BLOCK = /(<script type="application\/json" id="texts">)\{\}(<\/script>)/;

/**
 * A page template in `locale`: `<html lang>` set, `{{key}}` places given their texts (escaped), the texts
 * block (`<script type="application/json" id="texts">{}</script>`) given the texts as JSON, `<`
 * written as \u003c so no text can end the block. A key the texts lack is an error at start, not
 * a blank on the page.
 */
export function renderPage(template: string, locale: BuiltInLocale, groups: readonly TextGroup[]): string {
  const texts = textsOf(locale, groups);
  const filled = template.replace(/\{\{(\w+)\}\}/g, (_whole, key: string) => {
    const text = texts[key];
    if (text === undefined) throw new Error(`the page texts have no "${key}" (groups ${groups.join(', ')})`);
    return escapeHtml(text);
  });
  const json = JSON.stringify(texts).replace(/</g, '\\u003c');
  return filled
    .replace(HTML_LANG, `<html lang="${locale}">`)
    .replace(TEXTS_BLOCK, (_whole, open: string, close: string) => `${open}${json}${close}`);
}

/**
 * The headers of a page chosen by Accept-Language: caches keep one copy per language asked for
 * (added to a Vary that is there already, such as CORS's Origin).
 */
export function languageHeaders(
  reply: { getHeader(name: string): unknown; header(name: string, value: string): unknown },
  locale: BuiltInLocale,
): void {
  const vary = reply.getHeader('vary');
  const present = typeof vary === 'string' && vary !== '' ? vary : undefined;
  reply.header('content-language', locale);
  if (
    !present
      ?.toLowerCase()
      .split(/\s*,\s*/)
      .includes('accept-language')
  )
    reply.header('vary', present ? `${present}, Accept-Language` : 'Accept-Language');
}

/** A template rendered in every language, and the one for a request. */
export class LocalizedPage {
  readonly #pages: Record<BuiltInLocale, string>;
  constructor(template: string, groups: readonly TextGroup[]) {
    this.#pages = Object.fromEntries(
      BUILT_IN_LOCALES.map((locale) => [locale, renderPage(template, locale, groups)]),
    ) as Record<BuiltInLocale, string>;
  }

  in(locale: BuiltInLocale): string {
    return this.#pages[locale];
  }
}
