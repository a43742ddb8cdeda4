import { type SelectQueryBuilder, sql } from 'kysely';
import type { PageRequest } from '../shared/paging.ts';

/**
 * Applies a page request to a list query: the sort column, then the id so that ties always break
 * the same way (pages never overlap or skip), then the page's limit and offset. Both in the same
 * direction, so that an index on (column, id) serves either order. Every repository's list goes
 * through here.
 *
 * `unique`: the column is unique and never null, so it orders alone. PostgreSQL does not infer
 * that from a unique index, and would sort each one-row group of equal keys by id.
 */
export function paged<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  paging: PageRequest,
  sortColumn: string,
  { unique = false } = {},
): SelectQueryBuilder<DB, TB, O> {
  const direction = paging.descending ? sql`desc` : sql`asc`;
  const ordered = query.orderBy(sql`${sql.ref(sortColumn)} ${direction}`);
  return (unique || sortColumn === 'id' ? ordered : ordered.orderBy(sql`${sql.ref('id')} ${direction}`))
    .limit(paging.size)
    .offset(paging.offset);
}
