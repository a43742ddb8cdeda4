// `npm run lint:openapi`: Spectral (the spectral:oas ruleset and OWASP's API security ruleset,
// configured in .spectral.yaml) over the document each profile serves. Any error or warning fails.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROFILES } from '../src/config.ts';
import { servedDocument } from './openapi-document.ts';

// Inside the project: .spectral.yaml's exceptions name places in these files by a relative glob.
mkdirSync('node_modules/usher-lint', { recursive: true });
const dir = mkdtempSync(join('node_modules/usher-lint', 'openapi-'));
try {
  const files: string[] = [];
  for (const profile of PROFILES) {
    const file = join(dir, `profile-${profile}.json`);
    // As a production deployment serves it: on HTTPS, at its public address.
    const document = await servedDocument(profile, 'https://usher.example.com');
    writeFileSync(file, `${JSON.stringify(document, null, 2)}\n`);
    files.push(file);
  }
  const spectral = spawnSync(
    'spectral',
    ['lint', '--ruleset', '.spectral.yaml', '--fail-severity', 'hint', '--display-only-failures', ...files],
    {
      stdio: 'inherit',
      shell: false,
      env: { ...process.env, PATH: `node_modules/.bin:${process.env.PATH}` },
    },
  );
  process.exitCode = spectral.status ?? 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
