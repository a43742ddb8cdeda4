// pages/ offers the features that serve HTML: page texts by language, a page's locale, headers and filling.
export { escapeHtml, fill, LocalizedPage, languageHeaders, PAGE_TEXTS, pageLocale } from './i18n.ts';
