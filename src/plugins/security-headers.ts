import type { FastifyContextConfig } from 'fastify';
import { DOCS_PREFIX } from './openapi.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Responses about accounts or sessions must never be stored by a cache. */
    noStore?: boolean;
    /** An HTML page or one of its assets (src/pages): gets the pages' policy instead of the JSON one. */
    page?: boolean;
    /** With `page`: images may also come from blob: URLs (the account page's QR code). */
    blobImages?: boolean;
    /** The query string may carry a credential (a provider's authorization code): logged as the path only. */
    secretQuery?: boolean;
  }
}

const CSP = "default-src 'none'; frame-ancestors 'none'";
// Usher's own pages run only their own files: no inline script or style, so an injected tag runs
// nothing; fetch only to Usher; forms post only to Usher; never framed.
const PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
  "form-action 'self'; base-uri 'none'; frame-ancestors 'none'";
// The account page shows its QR code from a blob: URL of an SVG it fetched from Usher; only that
// page (and its own assets) get this one addition.
const ACCOUNT_PAGE_CSP = PAGE_CSP.replace("img-src 'self';", "img-src 'self' blob:;");
// The docs page (Swagger UI, under /docs) runs only the package's files and Usher's theme: no
// inline script or style either. Its icons and Usher's logo are data: images; "Try it out" and
// the document are fetched from Usher only.
const DOCS_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "form-action 'self'; base-uri 'none'; frame-ancestors 'none'";
/** Only on requests that came over https (the request's protocol decides, so it is added per request). */
export const HSTS = 'max-age=31536000; includeSubDomains';

export type HeaderList = ReadonlyArray<readonly [name: string, value: string]>;

/** Whether a URL or route pattern is the docs page's (/docs, /docs/…), not merely starting alike (/docsx). */
export function underDocs(url: string): boolean {
  return url.startsWith(DOCS_PREFIX) && ['', '/', '?'].includes(url.charAt(DOCS_PREFIX.length));
}

/**
 * The headers every response of a route carries, errors and 404s included, worked out once per
 * route (plugins/pipeline.ts sets them). JSON needs no scripts, styles or framing, so the CSP
 * forbids all of them; nosniff stops a browser reading JSON as HTML. Routes marked `config.page`
 * (Usher's HTML pages and their assets) get a policy that lets them run their own files, and so
 * does everything under /docs.
 * `path`: the route's pattern, or for the not-found handler the request's URL.
 */
export function securityHeaders(config: FastifyContextConfig, path: string): HeaderList {
  const headers: Array<[string, string]> = [['x-content-type-options', 'nosniff']];
  if (config.page) {
    headers.push(['content-security-policy', config.blobImages ? ACCOUNT_PAGE_CSP : PAGE_CSP]);
    // A page's address may still hold a link's token when a request leaves it (before its script
    // has cleared it, or with the ?token= fallback): no Referer carries it anywhere.
    headers.push(['referrer-policy', 'no-referrer']);
  } else {
    // The docs page (the Swagger UI package's routes, which carry no config of ours) runs its files.
    headers.push(['content-security-policy', underDocs(path) ? DOCS_CSP : CSP]);
  }
  if (config.noStore) headers.push(['cache-control', 'no-store']);
  return headers;
}
