import { type SelectQueryBuilder, sql } from 'kysely';
import type { PageRequest } from '../shared/paging.ts';

/**
 * Applies a page request to a list query: the sort column, then the id so that ties always break
 * the same way (pages never overlap or skip), then the page's limit and offset. Every
 * repository's list goes through here.
 */
export function paged<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  paging: PageRequest,
  sortColumn: string,
): SelectQueryBuilder<DB, TB, O> {
  const direction = paging.descending ? sql`desc` : sql`asc`;
  return query
    .orderBy(sql`${sql.ref(sortColumn)} ${direction}`)
    .orderBy(sql`${sql.ref('id')} ${direction}`)
    .limit(paging.size)
    .offset(paging.offset);
}
