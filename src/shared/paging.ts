// Paging as the services and repositories see it: which page, how big, in which order. The HTTP
// side (the query schema, X-Total-Count and Link) is in plugins/paging.ts.
import { AppError } from './errors.ts';

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

export interface PageRequest<K extends string = string> {
  page: number;
  size: number;
  offset: number;
  sort: K;
  descending: boolean;
}

export interface PagingQuery {
  page?: string;
  size?: string;
  sort?: string;
}

/** Reads an already-validated query (the schema above refused anything else). */
export function pageRequest<K extends string>(query: PagingQuery, defaultSort: K): PageRequest<K> {
  const page = Number(query.page ?? 1);
  const size = Number(query.size ?? DEFAULT_PAGE_SIZE);
  let sort: string = defaultSort;
  let descending = false;
  if (query.sort !== undefined) {
    const [key = '', direction] = query.sort.split(',');
    descending = key.startsWith('-') || direction === 'desc';
    sort = key.replace(/^-/, '');
  }
  return { page, size, offset: (page - 1) * size, sort: sort as K, descending };
}

/**
 * How deep a page may reach in an order read by skipping rows: page × size at most this. A deeper
 * page would make the database step over that many rows for one answer, on SQLite on the event
 * loop (decision 151). Orders that find any page through kept counts (`deepSorts`) have no bound.
 */
export const MAX_PAGE_DEPTH = 10_000;

/** The last page a Link may point to: the last one, or the deepest MAX_PAGE_DEPTH allows. */
export function lastPage(
  paging: PageRequest,
  total: number,
  deepSorts: readonly string[],
  depth = MAX_PAGE_DEPTH,
): number {
  const last = Math.max(1, Math.ceil(total / paging.size));
  if (deepSorts.includes(paging.sort)) return last;
  return Math.min(last, Math.max(1, Math.floor(depth / paging.size)));
}

/**
 * One page and the total in an order read by skipping rows (those in `deepSorts` have reads of
 * their own, which find both through the counts). The total first, from kept counts, so cheap: a
 * page that starts past the end is empty without reading a row; one that reaches past
 * MAX_PAGE_DEPTH is refused (400 INVALID_QUERY) before any is read. `deepSorts` also names the
 * way round in the refusal's message.
 */
export async function readPage<T>(
  paging: PageRequest,
  deepSorts: readonly string[],
  total: Promise<number>,
  rows: () => Promise<T[]>,
): Promise<{ items: T[]; total: number }> {
  const n = await total;
  if (paging.offset >= n) return { items: [], total: n };
  refuseDeepPage(paging, deepSorts);
  return { items: await rows(), total: n };
}

/** 400 INVALID_QUERY for a page deeper than `depth` rows in an order not in `deepSorts`. */
export function refuseDeepPage(
  paging: PageRequest,
  deepSorts: readonly string[],
  depth = MAX_PAGE_DEPTH,
): void {
  if (deepSorts.includes(paging.sort) || paging.page * paging.size <= depth) return;
  const other = paging.descending ? paging.sort : `-${paging.sort}`;
  const deep = deepSorts.length > 0 ? `, or sort by ${deepSorts.join(' or ')}, which pages to any depth` : '';
  throw new AppError(
    'INVALID_QUERY',
    `page: page × size may be at most ${depth} in this order; sort=${other} reads it from the other end${deep}`,
  );
}
