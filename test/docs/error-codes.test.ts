// docs/api.md's error table follows the codes the features declare (shared/errors.ts and each
// feature's errors.ts): a feature's new code is refused here until the page has its row. The
// page's words are its own (what a client needs); the code and the status are checked.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { FEATURES, featuresOf } from '../../src/features.ts';
import { ErrorTable } from '../../src/shared/errors.ts';

/** The rows of api.md's "Error codes" table: code → the statuses its Status column lists. */
function documentedCodes(): Map<string, number[]> {
  const page = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');
  const section = page.split(/^## /m).find((part) => part.startsWith('Error codes\n'));
  assert.ok(section, 'docs/api.md has a section "Error codes"');
  const rows = new Map<string, number[]>();
  for (const match of section.matchAll(/^\| `([A-Z_]+)` \| ([^|]+) \|/gm)) {
    rows.set(
      match[1]!,
      [...match[2]!.matchAll(/\b\d{3}\b/g)].map((m) => Number(m[0])),
    );
  }
  return rows;
}

test('docs/api.md lists every declared error code with its status, and no HTTP error code that none declares', () => {
  const table = ErrorTable.of(featuresOf(FEATURES));
  const rows = documentedCodes();
  for (const code of table.codes()) {
    const { status, owner } = table.declaration(code);
    assert.ok(rows.has(code), `${code} (declared by ${owner}) has a row in docs/api.md's error table`);
    assert.ok(rows.get(code)!.includes(status), `docs/api.md gives ${code} its status ${status}`);
  }
  // A code only ever written into a redirect (OAUTH_DENIED, 303 ?error=) is no HTTP error.
  for (const [code, statuses] of rows) {
    if (statuses.some((status) => status >= 400)) assert.ok(table.has(code), `${code} is declared`);
  }
});
