// Languages (CONTRACT "Sign-in by mail, languages, and users from other systems"): a user's
// `locale` is a BCP 47 tag, stored in its canonical form; mails and pages are written in the best
// match among the languages there are texts for. Matching is RFC 4647 lookup (a tag loses its
// last subtag until one is available: de-AT-1996 → de-AT → de), so the outcome is predictable for
// operators who add their own languages.
import { LookupSupportedLocales, match } from '@formatjs/intl-localematcher';
import Negotiator from 'negotiator';

/** The languages Usher ships texts for, mails and pages alike. */
export const BUILT_IN_LOCALES = ['en', 'de', 'fr', 'es'] as const;
export type BuiltInLocale = (typeof BUILT_IN_LOCALES)[number];

/** Where nothing else matches, and what an account has unless it says otherwise. */
export const DEFAULT_LOCALE = 'en';

/**
 * The longest tag accepted. RFC 5646 4.4.1 asks for at least 35 characters; a tag with a Unicode
 * extension (de-DE-u-co-phonebk) may be longer, and nothing real comes near 64.
 */
export const LOCALE_MAX = 64;

/** How many Accept-Language entries are looked at: a browser sends a handful, a header may hold thousands. */
const ACCEPT_LANGUAGE_ENTRIES = 20;

/** The canonical form of a BCP 47 tag (`DE-at` → `de-AT`), or undefined when it is not one. */
export function canonicalLocale(tag: string): string | undefined {
  if (tag.length === 0 || tag.length > LOCALE_MAX) return undefined;
  try {
    const [canonical] = Intl.getCanonicalLocales(tag);
    return canonical !== undefined && canonical.length <= LOCALE_MAX ? canonical : undefined;
  } catch {
    return undefined;
  }
}

/** The languages an Accept-Language header asks for, most wanted first, as canonical tags (bad ones left out). */
export function acceptedLocales(header: string | undefined): string[] {
  if (header === undefined || header.trim() === '') return [];
  const wanted = new Negotiator({ headers: { 'accept-language': header.slice(0, 4096) } }).languages();
  const tags: string[] = [];
  for (const raw of wanted.slice(0, ACCEPT_LANGUAGE_ENTRIES)) {
    const tag = raw === '*' ? undefined : canonicalLocale(raw);
    if (tag !== undefined && !tags.includes(tag)) tags.push(tag);
  }
  return tags;
}

/** The available locale to write in for `requested` (most wanted first): de-AT → de, unknown → en. */
export function bestLocale(requested: readonly string[], available: readonly string[]): string {
  const tags = requested.flatMap((tag) => canonicalLocale(tag) ?? []);
  if (tags.length === 0) return DEFAULT_LOCALE;
  return match(tags, available, DEFAULT_LOCALE, { algorithm: 'lookup' });
}

/**
 * The locale to keep for someone whose browser sent `header`: the first language it asks for
 * that some available language matches, as the browser wrote it (`de-AT` stays `de-AT`, so a
 * text added later for de-AT is used), or undefined when none matches. A language without texts
 * is passed over, so `ja, en;q=0.8` keeps `en` rather than a `ja` that every mail would turn into
 * the default.
 */
export function preferredLocale(
  header: string | undefined,
  available: readonly string[],
): string | undefined {
  for (const tag of acceptedLocales(header))
    if (LookupSupportedLocales([...available], [tag]).length > 0) return tag;
  return undefined;
}
