import fp from 'fastify-plugin';
import { DOCS_PREFIX } from './openapi.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Responses about accounts or sessions must never be stored by a cache. */
    noStore?: boolean;
    /** An HTML page or one of its assets (src/pages): gets the pages' policy instead of the JSON one. */
    page?: boolean;
    /** With `page`: images may also come from blob: URLs (the account page's QR code). */
    blobImages?: boolean;
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
const HSTS = 'max-age=31536000; includeSubDomains';

/** /docs, /docs/… and /docs?…: the docs page and its files (and not /docsx). */
function underDocs(url: string): boolean {
  return url.startsWith(DOCS_PREFIX) && ['', '/', '?'].includes(url.charAt(DOCS_PREFIX.length));
}

/**
 * Headers on every response, errors and 404s included. JSON needs no scripts, styles or framing,
 * so the CSP forbids all of them; nosniff stops a browser reading JSON as HTML. Routes marked
 * `config.page` (Usher's HTML pages and their assets) get a policy that lets them run their own files,
 * and so does everything under /docs (the Swagger UI package's routes, which carry no config of ours).
 */
export const securityHeadersPlugin = fp(
  async (app) => {
    // A callback hook (no promise) keeps this off the hot path's allocation budget.
    app.addHook('onRequest', (request, reply, done) => {
      reply.header('x-content-type-options', 'nosniff');
      if (request.routeOptions.config.page) {
        const { blobImages } = request.routeOptions.config;
        reply.header('content-security-policy', blobImages ? ACCOUNT_PAGE_CSP : PAGE_CSP);
        // A page's address may still hold a link's token when a request leaves it (before its script
        // has cleared it, or with the ?token= fallback): no Referer carries it anywhere.
        reply.header('referrer-policy', 'no-referrer');
      } else {
        reply.header('content-security-policy', underDocs(request.url) ? DOCS_CSP : CSP);
      }
      if (request.routeOptions.config.noStore) reply.header('cache-control', 'no-store');
      if (request.protocol === 'https') reply.header('strict-transport-security', HSTS);
      done();
    });
  },
  { name: 'usher-security-headers' },
);
