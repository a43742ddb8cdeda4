// The image, without Docker (no daemon here): the Dockerfile's steps carried out on a temporary
// directory, as a build would. Its COPY lines take the build context (the repository's files,
// less .gitignore's and .dockerignore's), its one RUN that installs runs (npm ci --omit=dev, from
// npm's cache when it can), and its CMD starts in its WORKDIR. That the server then serves, on
// SQLite and PostgreSQL, and the admin CLI works, proves nothing they need is a dev dependency
// and nothing they read is left out of the image; the HEALTHCHECK's command is run too.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, matchesGlob, posix } from 'node:path';
import { after, before, test } from 'node:test';
import { freePort, runProcess } from '../helpers/process.ts';
import { describeEachStore } from '../helpers/stores.ts';
import {
  copyParts,
  dockerfile,
  type Instruction,
  ROOT,
  type Running,
  read,
  registersAndSignsIn,
  startIn,
} from './packaging.ts';

/** The build context: the files a clone has (tracked, or new and not ignored), less .dockerignore's. */
function buildContext(): string[] {
  const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z'], {
    cwd: ROOT,
    encoding: 'utf8',
  })
    .split('\0')
    .filter((file) => file !== '' && existsSync(join(ROOT, file)));
  const patterns = read('.dockerignore')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  // Docker's rule: the last pattern that matches a path, or one of its parent folders, decides.
  const ignored = (file: string) => {
    let out = false;
    const parts = file.split('/');
    for (const pattern of patterns) {
      const negated = pattern.startsWith('!');
      const glob = negated ? pattern.slice(1) : pattern;
      const hit = parts.some((_, i) => matchesGlob(parts.slice(0, i + 1).join('/'), glob));
      if (hit) out = !negated;
    }
    return out;
  };
  return files.filter((file) => !ignored(file));
}

interface Image {
  /** The final stage's root; its WORKDIR, where CMD runs. */
  root: string;
  workdir: string;
  cmd: string[];
  healthcheck: string[];
  env: Record<string, string>;
}

/** Carries out the Dockerfile's steps: a folder per stage, container paths under it. */
function build(steps: Instruction[], context: string[], into: string): Image {
  const stages: { name?: string; root: string; workdir: string; env: Record<string, string> }[] = [];
  let cmd: string[] = [];
  let healthcheck: string[] = [];
  for (const step of steps) {
    if (step.keyword === 'FROM') {
      const name = /\bAS\s+(\S+)$/i.exec(step.args)?.[1];
      stages.push({ name, root: join(into, `stage-${step.stage}`), workdir: '/', env: {} });
      continue;
    }
    const stage = stages[step.stage]!;
    const inside = (path: string) => join(stage.root, posix.resolve(stage.workdir, path));
    switch (step.keyword) {
      case 'WORKDIR':
        stage.workdir = posix.resolve(stage.workdir, step.args);
        mkdirSync(inside('.'), { recursive: true });
        break;
      case 'ENV':
        for (const pair of step.args.split(/\s+/)) {
          const [name, value] = pair.split('=');
          stage.env[name!] = value!;
        }
        break;
      case 'COPY': {
        const { flags, sources, dest } = copyParts(step.args);
        const target = inside(dest);
        if (flags.from !== undefined) {
          const from = stages.find((s) => s.name === flags.from);
          assert.ok(from, `COPY --from=${flags.from} names a stage`);
          for (const source of sources) cpSync(join(from.root, source), target, { recursive: true });
          break;
        }
        for (const source of sources) {
          const files = context.filter((f) => f === source || f.startsWith(`${source}/`));
          assert.ok(files.length > 0, `${source} is in the build context`);
          const intoFolder = dest.endsWith('/') || sources.length > 1;
          for (const file of files) {
            const relative = file === source ? posix.basename(file) : file.slice(source.length + 1);
            const to = file === source && !intoFolder ? target : join(target, relative);
            mkdirSync(dirname(to), { recursive: true });
            cpSync(join(ROOT, file), to);
          }
        }
        break;
      }
      case 'RUN':
        for (const command of step.args.split('&&').map((c) => c.trim())) {
          if (/^npm ci\b/.test(command)) {
            // As written, from npm's cache when it has the packages (this is a test, not a release).
            const args = [...command.split(/\s+/).slice(1), '--prefer-offline'];
            const run = spawnSync('npm', args, { cwd: inside('.'), encoding: 'utf8' });
            assert.equal(run.status, 0, `npm ${args.join(' ')}: ${run.stderr}`);
          } else if (/^mkdir -p /.test(command)) {
            for (const path of command.split(/\s+/).slice(2)) mkdirSync(inside(path), { recursive: true });
          } else if (/^(chown|npm cache clean)\b/.test(command)) {
            // Ownership and the image's npm cache: nothing to check here.
          } else {
            assert.fail(`a RUN step this test does not know: "${command}" (teach it, or keep RUN simple)`);
          }
        }
        break;
      case 'CMD':
        cmd = JSON.parse(step.args) as string[];
        break;
      case 'HEALTHCHECK':
        healthcheck = JSON.parse(/\bCMD\s+(\[.*\])$/.exec(step.args)![1]!) as string[];
        break;
      default:
        break;
    }
  }
  const final = stages.at(-1)!;
  return { root: final.root, workdir: join(final.root, final.workdir), cmd, healthcheck, env: final.env };
}

let image: Image;
let folder: string;
/** What the image holds as built, read before any test runs a server in it (tests run in any order). */
let built: { present: string[] };
const NOT_IN_THE_IMAGE = ['test', 'bench', 'docs', '.git', '.env', 'data/usher.db'];
before(() => {
  folder = mkdtempSync(join(tmpdir(), 'usher-image-'));
  image = build(dockerfile(), buildContext(), folder);
  built = { present: NOT_IN_THE_IMAGE.filter((path) => existsSync(join(image.workdir, path))) };
});
// The installed modules weigh tens of megabytes: not left behind in /tmp at every run.
after(() => rmSync(folder, { recursive: true, force: true }));

/** The image's program: `node` is this Node (the test's, as the image's is node:24's). */
const command = (argv: string[]) =>
  argv.map((word, i) => (i === 0 && word === 'node' ? process.execPath : word));

/** The image's environment with the port the test chose; on loopback, the machine being shared. */
const imageEnv = async (more: Record<string, string> = {}) => ({
  ...image.env,
  HOST: '127.0.0.1',
  PORT: String(await freePort()),
  LOG_LEVEL: 'warn',
  ...more,
});

test('ISSUE 32: the image holds the production dependencies only, and none of the development tools', () => {
  const lock = JSON.parse(readFileSync(join(image.workdir, 'node_modules/.package-lock.json'), 'utf8')) as {
    packages: Record<string, { dev?: boolean }>;
  };
  const dev = Object.entries(lock.packages).filter(([, entry]) => entry.dev);
  assert.deepEqual(dev, [], 'no dev package installed');
  const manifest = JSON.parse(read('package.json')) as { devDependencies: Record<string, string> };
  for (const name of Object.keys(manifest.devDependencies))
    assert.ok(!existsSync(join(image.workdir, 'node_modules', name)), `${name} is not in the image`);
  assert.deepEqual(built.present, [], 'none of these is in the image as built');
  assert.ok(statSync(join(image.workdir, 'data')).isDirectory(), 'the data folder (the VOLUME) is made');
});

describeEachStore('the production install', (store) => {
  let server: Running;
  let env: Record<string, string>;
  before(async () => {
    // On SQLite the image's default database, sqlite:./data/usher.db, in the WORKDIR's volume.
    env = await imageEnv(store.kind === 'postgres' ? { DATABASE_URL: store.url } : {});
    server = await startIn(command(image.cmd), image.workdir, env);
  });
  after(() => server?.stop());

  test('ISSUE 32: the image’s CMD serves: health, readiness, registration and sign-in, the docs page', async () => {
    assert.equal((await fetch(`${server.url}/readyz`)).status, 200);
    await registersAndSignsIn(server.url, `image-${store.kind}@example.com`);
    assert.equal((await fetch(`${server.url}/openapi.json`)).status, 200);
    assert.equal((await fetch(`${server.url}/docs`)).status, 200);
    if (store.kind === 'sqlite')
      assert.ok(existsSync(join(image.workdir, 'data', 'usher.db')), 'the database is in the volume');
  });

  test('ISSUE 32: the image’s admin CLI works on the same database', async () => {
    const email = `image-cli-${store.kind}@example.com`;
    const cli = (args: string[], input = '') =>
      runProcess(process.execPath, ['bin/usher.mjs', ...args], env, input, image.workdir);
    const added = await cli(['users', 'add', '--email', email, '--name', 'Cli'], 'image-cli-pass-1\n');
    assert.equal(added.code, 0, added.stderr);
    const signin = await fetch(`${server.url}/api/signin`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: 'image-cli-pass-1' }),
    });
    assert.equal(signin.status, 200);
    assert.equal((await cli(['users', '--help'])).code, 0);
  });

  test('ISSUE 32: the HEALTHCHECK command passes while the server answers, fails when nothing does', async () => {
    const check = (port: string) =>
      spawnSync(command(image.healthcheck)[0]!, image.healthcheck.slice(1), {
        cwd: image.workdir,
        env: { ...env, PORT: port },
        timeout: 30_000,
      }).status;
    assert.equal(check(new URL(server.url).port), 0);
    assert.equal(check(String(await freePort())), 1);
  });
});
