// node:test counts a skipped test in its summary ("skipped N") but not a skipped suite: a suite
// skipped with `describe(title, { skip })` shows one "﹣" line and then "skipped 0", so a whole
// store or browser that was never tested goes unnoticed at the bottom of a long run.
import { describe, test } from 'node:test';

/**
 * `describe(title, fn)`, or, when `skip` gives a reason, one skipped test of that title in its
 * place, so the summary's skipped figure counts it (the "﹣ title # reason" line is unchanged).
 */
export function describeUnless(skip: string | false, title: string, fn: () => void): void {
  if (skip) test(title, { skip }, () => {});
  else describe(title, fn);
}
