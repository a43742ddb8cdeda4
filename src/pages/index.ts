// pages/ offers the features that serve HTML: a page's locale, headers and filling, and the types of page texts.
export type { FeaturePageTexts, PageTextSet } from './i18n.ts';
export { escapeHtml, fill, LocalizedPage, languageHeaders, pageLocale } from './i18n.ts';
