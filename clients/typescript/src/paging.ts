// A list's body is a plain array; the paging is in its headers: X-Total-Count and a Link header
// with first, prev, next and last (RFC 8288), each a URL relative to the server.

/** One of a list's neighbouring pages. */
export interface PageLink {
  /** The URL as Usher wrote it (relative to the server, other query parameters kept). */
  readonly href: string;
  /** 1-based page number. */
  readonly page: number;
  readonly size: number;
}

/** What a list response's headers say about its pages. */
export interface Page {
  /** Records in the whole list (X-Total-Count), not only on this page. */
  readonly total: number;
  readonly first?: PageLink;
  /** Absent on the first page. */
  readonly prev?: PageLink;
  /** Absent on the last page. */
  readonly next?: PageLink;
  readonly last?: PageLink;
}

type Rel = 'first' | 'prev' | 'next' | 'last';
const RELS: readonly string[] = ['first', 'prev', 'next', 'last'] satisfies Rel[];

function pageLink(href: string): PageLink | undefined {
  const query = new URL(href, 'http://usher.invalid').searchParams;
  const page = Number(query.get('page'));
  const size = Number(query.get('size'));
  return Number.isSafeInteger(page) && Number.isSafeInteger(size) ? { href, page, size } : undefined;
}

/** The paging of a list response, or undefined when it has no X-Total-Count (not a paged list). */
export function readPage(headers: Headers): Page | undefined {
  const count = headers.get('x-total-count');
  if (count === null || !/^[0-9]+$/.test(count)) return undefined;
  const total = Number(count);
  // A count past 2^53 would be rounded; no list comes near it, so it is refused rather than typed bigint.
  if (!Number.isSafeInteger(total)) throw new RangeError(`X-Total-Count ${count} is beyond 2^53`);
  const page: { total: number } & { -readonly [R in Rel]?: PageLink } = { total };
  // Link values are `<url>; rel="name"`, comma-separated; Usher's URLs never hold a comma unescaped.
  for (const part of (headers.get('link') ?? '').split(/,\s*(?=<)/)) {
    const match = /^\s*<([^>]*)>\s*;\s*rel="?([a-z]+)"?/.exec(part);
    if (!match || !RELS.includes(match[2]!)) continue;
    const link = pageLink(match[1]!);
    if (link) page[match[2] as Rel] = link;
  }
  return page;
}
