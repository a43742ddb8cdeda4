import { type Kysely, type SelectQueryBuilder, sql } from 'kysely';
import type { PageRequest } from '../shared/paging.ts';
import type { Tables } from './schema.ts';

/** A table of per-range counts kept by triggers (user_counts, product_counts), and its widths. */
export interface RangeCounts {
  table: 'user_counts' | 'product_counts';
  /** The column holding each range's count. */
  column: 'users' | 'products';
  span: { readonly wide: number; readonly narrow: number };
}

interface RangeCount {
  first_id: bigint;
  n: bigint;
}

/** Where a page in id order starts: its first range's bound and how many rows of it come before the page. */
export interface IdPageStart {
  /** Ascending: read from this id up (`id >= from`); descending: from below it down (`id < from`). */
  from: bigint;
  skip: number;
}

/** The total, from the wide ranges' counts rather than a scan of the table. */
export async function countedTotal(db: Kysely<Tables>, counts: RangeCounts): Promise<number> {
  const { rows } = await sql<{ n: bigint | string | number | null }>`
    select sum(${sql.ref(counts.column)}) as n from ${sql.table(counts.table)}
     where span = ${BigInt(counts.span.wide)}`.execute(db);
  return Number(rows[0]?.n ?? 0);
}

/**
 * Walks the wide ranges' counts to the one the page starts in, then the narrow ones inside it:
 * a few dozen small rows at any depth. The caller then reads rows from `from`, skipping `skip`
 * (under a narrow range's width). `start` is undefined when the page starts past the end.
 */
export async function idPageStart(
  db: Kysely<Tables>,
  counts: RangeCounts,
  paging: PageRequest,
): Promise<{ start: IdPageStart | undefined; total: number }> {
  const order = paging.descending ? sql`desc` : sql`asc`;
  const ranges = async (span: number, within?: bigint) => {
    const { rows } = await sql<RangeCount>`
      select first_id, ${sql.ref(counts.column)} as n from ${sql.table(counts.table)}
       where span = ${BigInt(span)} and ${sql.ref(counts.column)} > 0
       ${within === undefined ? sql`` : sql`and first_id >= ${within} and first_id < ${within + BigInt(counts.span.wide)}`}
       order by first_id ${order}`.execute(db);
    return rows;
  };
  const wide = await ranges(counts.span.wide);
  const total = wide.reduce((n, r) => n + Number(r.n), 0);
  const inWide = findRange(wide, paging.offset);
  if (!inWide) return { start: undefined, total };
  const inNarrow = findRange(await ranges(counts.span.narrow, inWide.range.first_id), inWide.skip);
  // Only a write between the two reads can make the narrow counts disagree with the wide one.
  if (!inNarrow) return { start: undefined, total };
  const first = inNarrow.range.first_id;
  const from = paging.descending ? first + BigInt(counts.span.narrow) : first;
  return { start: { from, skip: inNarrow.skip }, total };
}

/**
 * One page of `query` (a select of a table counted by `counts`) in id order, and the total, both
 * found through the counts: a few dozen count rows, then at most a narrow range's rows skipped,
 * at any depth. A page past the end reads no row.
 */
export async function pageInIdOrder<DB, TB extends keyof DB, O>(
  db: Kysely<Tables>,
  counts: RangeCounts,
  query: SelectQueryBuilder<DB, TB, O>,
  paging: PageRequest,
): Promise<{ rows: O[]; total: number }> {
  const { start, total } = await idPageStart(db, counts, paging);
  if (!start) return { rows: [], total };
  const id = sql.ref('id');
  const rows = await (paging.descending
    ? query.where(sql<boolean>`${id} < ${start.from}`).orderBy(sql`${id} desc`)
    : query.where(sql<boolean>`${id} >= ${start.from}`).orderBy(sql`${id} asc`)
  )
    .limit(paging.size)
    .offset(start.skip)
    .execute();
  return { rows, total };
}

/** The range, of counts in page order, holding the row at `offset`, and how many come before it there. */
function findRange(ranges: RangeCount[], offset: number): { range: RangeCount; skip: number } | undefined {
  let skip = offset;
  for (const range of ranges) {
    const n = Number(range.n);
    if (skip < n) return { range, skip };
    skip -= n;
  }
  return undefined;
}
