// The two pages a link in a mail opens (CONTRACT "Mail, password reset and email verification"):
// GET /reset-password and GET /verify-email, and their script and style under /pages/. The token
// travels in the link's fragment, which a browser never sends, so these routes never see it; each
// page's script reads it and calls the JSON API. GET /account (issue 14): the signed-in user's own
// page (sessions, two-step sign-in, passkeys), a reference for teams who build their own, and
// POST /account/qr, which draws a QR code for it. GET /admin (issue 29): the console for support
// staff and administrators, on the admin API. Each page is served in the browser's language
// (i18n.ts), but the console, which stays English.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { LocalizedPage, languageHeaders, type PageTextSet, pageLocale, type TextGroup } from './i18n.ts';

const ASSETS = new URL('./assets/', import.meta.url);

/**
 * Each page, its template, and the groups of texts it takes (pages/texts/ for `common` and
 * `account`, the feature that drives the page for the others: recovery/, mail-signin/). The staff console
 * stays English whatever the browser asks (its texts are its own; it takes the common ones, in
 * English, for what it shares with the other pages).
 */
const PAGES: Record<string, { file: string; texts: readonly TextGroup[]; english?: true }> = {
  '/reset-password': { file: 'reset-password.html', texts: ['common', 'resetPassword'] },
  '/verify-email': { file: 'verify-email.html', texts: ['common', 'verifyEmail'] },
  '/signin/email-link': { file: 'signin-email-link.html', texts: ['common', 'signinEmailLink'] },
  '/account': { file: 'account.html', texts: ['common', 'account'] },
  '/admin': { file: 'admin.html', texts: ['common'], english: true },
};

const FILES = {
  'pages.css': 'text/css; charset=utf-8',
  'link.js': 'text/javascript; charset=utf-8',
  'reset-password.js': 'text/javascript; charset=utf-8',
  'verify-email.js': 'text/javascript; charset=utf-8',
  'signin-email-link.js': 'text/javascript; charset=utf-8',
  'account.js': 'text/javascript; charset=utf-8',
  'account.css': 'text/css; charset=utf-8',
  'interaction.js': 'text/javascript; charset=utf-8',
  'interaction.css': 'text/css; charset=utf-8',
  'admin.js': 'text/javascript; charset=utf-8',
  'admin.css': 'text/css; charset=utf-8',
  // Named by the pages, so a browser does not ask for /favicon.ico (a 404) on every visit.
  'icon.svg': 'image/svg+xml',
} as const;

/** The account page and its own assets may show blob: images (its QR code); no other page may. */
const BLOB_IMAGES = new Set(['/account', '/pages/account.js', '/pages/account.css']);

/** The longest text POST /account/qr draws: an otpauth URI is well under it. */
export const QR_MAX_TEXT = 512;

/** Where the assets are served; the pages' HTML names them with this prefix. */
export const ASSETS_PREFIX = '/pages/';

/** True when an If-None-Match header names this ETag (a list, weak forms and `*` included). */
function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t === etag || t === `W/${etag}`;
  });
}

/** `pageTexts`: every group of texts, pages/'s and the features' (composed at start, app.ts). */
export const pagesRoutes: FastifyPluginAsyncTypebox<{ pageTexts: PageTextSet }> = async (
  app,
  { pageTexts },
) => {
  // Read and rendered in every language once, at start-up: a missing file, group or text stops
  // the start instead of failing a user later.
  for (const [path, { file, texts, english }] of Object.entries(PAGES)) {
    const page = new LocalizedPage(await readFile(new URL(file, ASSETS), 'utf8'), texts, pageTexts);
    app.get(
      path,
      {
        schema: { hide: true },
        // noStore: the page shown for a link is not kept by a browser or a proxy.
        config: { page: true, noStore: true, usesDatabase: false, blobImages: BLOB_IMAGES.has(path) },
      },
      async (request, reply) => {
        if (english) return reply.type('text/html; charset=utf-8').send(page.in('en'));
        const locale = pageLocale(request.headers['accept-language']);
        languageHeaders(reply, locale);
        return reply.type('text/html; charset=utf-8').send(page.in(locale));
      },
    );
  }

  for (const [file, type] of Object.entries(FILES)) {
    const body = await readFile(new URL(file, ASSETS));
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
    app.get(
      `${ASSETS_PREFIX}${file}`,
      {
        schema: { hide: true },
        config: { page: true, usesDatabase: false, blobImages: BLOB_IMAGES.has(`${ASSETS_PREFIX}${file}`) },
      },
      async (request, reply) => {
        // Revalidated on every use (a 304 of a few bytes) rather than cached for a time: after an
        // upgrade, a page can never run with last version's script or style.
        reply.header('cache-control', 'no-cache').header('etag', etag);
        if (matches(request.headers['if-none-match'], etag)) return reply.code(304).send();
        return reply.type(type).send(body);
      },
    );
  }

  // The account page's QR code for an otpauth URI, drawn here rather than by a remote service (the
  // secret must never leave Usher) or by a library shipped to the browser. Nothing is stored; the
  // page shows the SVG through a blob: URL. No-store: the image holds the secret. Only for a
  // session (the page has one when it sets TOTP up): nobody else may spend Usher's CPU drawing.
  app.post(
    '/account/qr',
    {
      schema: {
        hide: true,
        body: Type.Object(
          { text: Type.String({ minLength: 1, maxLength: QR_MAX_TEXT }) },
          { additionalProperties: false },
        ),
      },
      config: { page: true, noStore: true, auth: 'session' },
    },
    async (request, reply) => {
      // Loaded on first use: only the account page's TOTP set-up draws codes.
      const { default: QRCode } = await import('qrcode');
      const svg = await QRCode.toString(request.body.text, { type: 'svg', margin: 2 });
      return reply.type('image/svg+xml').send(svg);
    },
  );
};
