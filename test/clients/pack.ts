// `npm pack` of @usher/client and its install into a fresh project outside the repository, for the
// tests that use the package as a project that has never seen Usher does (packed-client.test.ts,
// test/examples/spa-browser.test.ts). The pack's prepack rebuilds clients/typescript/dist in place,
// so two test files packing at once would ship each other's half-built dist/: a lock directory
// under the system's temp directory makes them take turns.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { type ProcessRun, runProcess } from '../helpers/process.ts';

export const CLIENT_WORKSPACE = fileURLToPath(new URL('../../clients/typescript/', import.meta.url));
const LOCK = join(tmpdir(), 'usher-client-pack.lock');
/** A file put in dist/ before each pack: the prepack's build must leave it out. */
export const STALE_FILE = 'dist/left-before-the-pack.js';

/**
 * What reaches the registry where this machine does: the certificate authorities and proxies it
 * trusts (a registry behind a TLS-inspecting proxy answers SELF_SIGNED_CERT_IN_CHAIN without
 * them, and npm retries until the test's limit). Nothing else of the environment.
 */
const NETWORK_SETTINGS = [
  'NODE_EXTRA_CA_CERTS',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'HTTPS_PROXY',
  'HTTP_PROXY',
  'NO_PROXY',
  'https_proxy',
  'http_proxy',
  'no_proxy',
  'npm_config_cafile',
  'npm_config_registry',
];

/** npm's cache lives under HOME; the rest of the environment stays out of the commands. */
export const NPM_ENV: Record<string, string> = {
  HOME: process.env.HOME ?? tmpdir(),
  ...Object.fromEntries(
    NETWORK_SETTINGS.flatMap((name) => {
      const value = process.env[name];
      return value === undefined ? [] : [[name, value]];
    }),
  ),
};

export function succeeded(run: ProcessRun, what: string): string {
  assert.equal(run.code, 0, `${what} failed (${run.code}):\n${run.stdout}\n${run.stderr}`);
  return run.stdout;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function withLock<T>(work: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch {
      // Taken. A holder that died (killed mid-pack) leaves its pid behind: take the lock over.
      let holder = 0;
      try {
        holder = Number(readFileSync(join(LOCK, 'pid'), 'utf8'));
      } catch {
        // Released a moment ago, or its holder has not written its pid yet.
      }
      if (holder > 0 && !alive(holder)) rmSync(LOCK, { recursive: true, force: true });
      await sleep(200);
    }
  }
  writeFileSync(join(LOCK, 'pid'), String(process.pid));
  try {
    return await work();
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

export interface PackedClient {
  /** The tarball's path. */
  readonly tarball: string;
  /** The paths inside the package, sorted. */
  readonly files: readonly string[];
}

/** `npm pack` of the workspace into `destination` (its prepack builds dist/ first). */
export function packClient(destination: string): Promise<PackedClient> {
  return withLock(async () => {
    mkdirSync(join(CLIENT_WORKSPACE, 'dist'), { recursive: true });
    writeFileSync(join(CLIENT_WORKSPACE, STALE_FILE), 'export {};\n');
    const output = succeeded(
      await runProcess(
        'npm',
        ['pack', '--json', '--pack-destination', destination],
        NPM_ENV,
        '',
        CLIENT_WORKSPACE,
      ),
      'npm pack',
    );
    // Lifecycle scripts may print before npm's JSON.
    const [packed] = JSON.parse(output.slice(output.indexOf('['))) as [
      { filename: string; files: Array<{ path: string }> },
    ];
    return {
      tarball: join(destination, packed.filename),
      files: packed.files.map((file) => file.path).sort(),
    };
  });
}

/** `npm install` of the tarball (and whatever else the project's package.json lists) from npm's cache. */
export async function installPacked(project: string, tarball: string): Promise<void> {
  succeeded(
    await runProcess(
      'npm',
      ['install', '--prefer-offline', '--no-audit', '--no-fund', tarball],
      NPM_ENV,
      '',
      project,
    ),
    `npm install in ${project}`,
  );
}
