// Usher's pages in the browser's language (CONTRACT "Languages"): each page's HTML is a template
// whose {{key}} places take its texts, rendered once per language at start, and the one for a
// request is chosen by its Accept-Language (Vary: Accept-Language; Content-Language). The texts
// a page's script shows go in the same document, in a JSON data block: inert, so the pages' CSP,
// which runs no inline script, stays as it is, and nothing more is fetched.
import { acceptedLocales, BUILT_IN_LOCALES, type BuiltInLocale, bestLocale } from '../shared/locale.ts';
import { de } from './texts/de.ts';
import { en, type OwnPageTexts } from './texts/en.ts';
import { es } from './texts/es.ts';
import { fr } from './texts/fr.ts';

/**
 * The pages' texts in one language, by group: pages/'s own (texts/: `common`, which every page
 * with a script shares, and the account page's), and each feature's, which its page-texts.ts adds
 * to this interface by module augmentation (as a feature's tables.ts adds to db/schema.ts's
 * `Tables`). So a page naming a group no feature declares fails to compile, pages/ imports no
 * feature, and two features declaring one group with different keys fail to compile too.
 */
export interface PageTexts extends OwnPageTexts {}
export type TextGroup = keyof PageTexts;

/** Groups of texts with the groups and keys of `English`, each text a string: one language's. */
export type Translated<English> = { [Group in keyof English]: Record<keyof English[Group], string> };

/** Groups of texts in every one of Usher's languages. */
export type PageTextsByLocale<Groups> = Readonly<Record<BuiltInLocale, Groups>>;

/** What a feature declares (its `Feature.pageTexts`): its groups, in every language. */
export type FeaturePageTexts = PageTextsByLocale<Partial<PageTexts>>;

/** Every group of texts in every language: pages/'s own and the features', composed at start. */
export type PageTextSet = PageTextsByLocale<PageTexts>;

const OWN: PageTextsByLocale<OwnPageTexts> = { en, de, fr, es };

/**
 * pages/'s own groups and those `features` declare, in every language: built once at start, from
 * the features served. A group declared twice stops the start: each owner would believe the page
 * shows its texts, and which one did would hang on the features' order.
 */
export function composePageTexts(
  features: readonly { readonly name: string; readonly pageTexts?: FeaturePageTexts }[],
): PageTextSet {
  const owners = new Map<string, string>(Object.keys(OWN.en).map((group) => [group, 'pages']));
  const set = Object.fromEntries(BUILT_IN_LOCALES.map((locale) => [locale, { ...OWN[locale] }])) as Record<
    BuiltInLocale,
    Partial<PageTexts>
  >;
  for (const { name, pageTexts } of features) {
    if (!pageTexts) continue;
    for (const group of Object.keys(pageTexts.en)) {
      const owner = owners.get(group);
      if (owner) throw new Error(`the page texts "${group}" are declared twice: by ${owner} and by ${name}`);
      owners.set(group, name);
    }
    for (const locale of BUILT_IN_LOCALES) Object.assign(set[locale], pageTexts[locale]);
  }
  // Every group of the type is there only if each feature that declares one is served; a page
  // asking for one that is not stops the start when it is rendered (textsOf).
  return set as PageTextSet;
}

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

/**
 * The texts of `groups` in `locale`, as one map (a later group's key wins). A group the set lacks
 * (its feature is not served) is an error, not a page without its texts.
 */
export function textsOf(
  texts: PageTextSet,
  locale: BuiltInLocale,
  groups: readonly TextGroup[],
): Record<string, string> {
  return Object.assign(
    {},
    ...groups.map((group) => {
      const found = texts[locale][group] as Record<string, string> | undefined;
      if (!found)
        throw new Error(`no feature served declares the page texts "${group}" (its Feature.pageTexts)`);
      return found;
    }),
  ) as Record<string, string>;
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
export function renderPage(
  template: string,
  locale: BuiltInLocale,
  groups: readonly TextGroup[],
  set: PageTextSet,
): string {
  const texts = textsOf(set, locale, groups);
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
  constructor(template: string, groups: readonly TextGroup[], texts: PageTextSet) {
    this.#pages = Object.fromEntries(
      BUILT_IN_LOCALES.map((locale) => [locale, renderPage(template, locale, groups, texts)]),
    ) as Record<BuiltInLocale, string>;
  }

  in(locale: BuiltInLocale): string {
    return this.#pages[locale];
  }
}
