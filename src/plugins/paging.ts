// Paging on the wire: the query schema every list shares, and the X-Total-Count and Link headers.
// Each collection declares only its sort keys; the page request itself is in shared/paging.ts.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type TSchema, Type } from 'typebox';
import { DEFAULT_PAGE_SIZE, lastPage, MAX_PAGE_SIZE, type PageRequest } from '../shared/paging.ts';
import { success } from '../shared/schemas.ts';

/** A page number as text: 1 to 999,999,999, no sign or leading zero. */
export const PAGE_PATTERN = '^[1-9][0-9]{0,8}$';
/** A page size as text: 1 to MAX_PAGE_SIZE. */
export const SIZE_PATTERN = `^(${MAX_PAGE_SIZE}|[1-9][0-9]?)$`;

/** The querystring schema of a list sortable by `keys` (the first is the default, `id`). */
export function pagingQuery(keys: readonly string[]) {
  const alternatives = keys.join('|');
  return Type.Object(
    {
      page: Type.Optional(
        Type.String({ pattern: PAGE_PATTERN, description: 'a whole number from 1 (default 1)' }),
      ),
      size: Type.Optional(
        Type.String({
          pattern: SIZE_PATTERN,
          description: `a whole number from 1 to ${MAX_PAGE_SIZE} (default ${DEFAULT_PAGE_SIZE})`,
        }),
      ),
      sort: Type.Optional(
        Type.String({
          pattern: `^(-?(${alternatives})|(${alternatives}),(asc|desc))$`,
          // The longest text the pattern accepts, so the limit never decides alone.
          maxLength: Math.max(...keys.map((k) => k.length)) + ',desc'.length,
          description: `one of ${keys.join(', ')}; "-key" or "key,desc" for descending (default id)`,
        }),
      ),
    },
    // Other parameters are ignored here and kept in the Link header.
    { additionalProperties: true },
  );
}

/** A list's 200: up to a page of `item`, with the headers setPageHeaders sets. */
export function pageOf<T extends TSchema>(item: T, description: string) {
  return success(Type.Array(item, { maxItems: MAX_PAGE_SIZE }), description, 'X-Total-Count', 'Link');
}

/**
 * Sets X-Total-Count and a Link header (first, prev, next, last) that keeps the other query
 * parameters. In an order bounded by MAX_PAGE_DEPTH (every order but `deepSorts`), next and last
 * stop at the deepest page served, so a client that follows them never meets the 400.
 */
export function setPageHeaders(
  request: FastifyRequest,
  reply: FastifyReply,
  paging: PageRequest,
  total: number,
  deepSorts: readonly string[] = [],
  depth?: number,
): void {
  const last = lastPage(paging, total, deepSorts, depth);
  const url = new URL(request.url, 'http://usher.invalid');
  const link = (page: number, rel: string) => {
    url.searchParams.set('page', String(page));
    url.searchParams.set('size', String(paging.size));
    return `<${url.pathname}${url.search}>; rel="${rel}"`;
  };
  const links = [link(1, 'first')];
  if (paging.page > 1) links.push(link(Math.min(paging.page - 1, last), 'prev'));
  if (paging.page < last) links.push(link(paging.page + 1, 'next'));
  links.push(link(last, 'last'));
  reply.header('x-total-count', String(total));
  reply.header('link', links.join(', '));
}
