// Paging as the services and repositories see it: which page, how big, in which order. The HTTP
// side (the query schema, X-Total-Count and Link) is in plugins/paging.ts.

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
