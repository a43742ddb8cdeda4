// The two pages a link in a mail opens (CONTRACT "Mail, password reset and email verification"):
// GET /reset-password and GET /verify-email, and their script and style under /pages/. The token
// travels in the link's fragment, which a browser never sends, so these routes never see it; each
// page's script reads it and calls the JSON API.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';

const ASSETS = new URL('./assets/', import.meta.url);

const PAGES = {
  '/reset-password': 'reset-password.html',
  '/verify-email': 'verify-email.html',
} as const;

const FILES = {
  'pages.css': 'text/css; charset=utf-8',
  'link.js': 'text/javascript; charset=utf-8',
  'reset-password.js': 'text/javascript; charset=utf-8',
  'verify-email.js': 'text/javascript; charset=utf-8',
  // Named by the pages, so a browser does not ask for /favicon.ico (a 404) on every visit.
  'icon.svg': 'image/svg+xml',
} as const;

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

export const pagesRoutes: FastifyPluginAsyncTypebox = async (app) => {
  // Read once, at start-up: a missing file stops the start instead of failing a user later.
  for (const [path, file] of Object.entries(PAGES)) {
    const html = await readFile(new URL(file, ASSETS));
    app.get(
      path,
      {
        schema: { hide: true },
        // noStore: the page shown for a link is not kept by a browser or a proxy.
        config: { page: true, noStore: true, usesDatabase: false },
      },
      async (_request, reply) => reply.type('text/html; charset=utf-8').send(html),
    );
  }

  for (const [file, type] of Object.entries(FILES)) {
    const body = await readFile(new URL(file, ASSETS));
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
    app.get(
      `${ASSETS_PREFIX}${file}`,
      { schema: { hide: true }, config: { page: true, usesDatabase: false } },
      async (request, reply) => {
        // Revalidated on every use (a 304 of a few bytes) rather than cached for a time: after an
        // upgrade, a page can never run with last version's script or style.
        reply.header('cache-control', 'no-cache').header('etag', etag);
        if (matches(request.headers['if-none-match'], etag)) return reply.code(304).send();
        return reply.type(type).send(body);
      },
    );
  }
};
