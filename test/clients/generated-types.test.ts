// The client's types are generated from the document the server serves; a route schema change
// without `npm run generate -w @usher/client` leaves them describing another API. Regenerated here
// in memory and compared with the committed files.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { test } from 'node:test';
import { generateAll } from '../../clients/typescript/scripts/generate.ts';

test('the committed client types are what the served OpenAPI documents generate (else: npm run generate -w @usher/client)', async () => {
  for (const { path, source } of await generateAll()) {
    const committed = readFileSync(path, 'utf8');
    assert.ok(
      committed === source,
      `${relative(process.cwd(), path)} is stale: run \`npm run generate -w @usher/client\` and commit the result`,
    );
  }
});
