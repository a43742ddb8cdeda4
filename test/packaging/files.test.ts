// The deployment files (issue 32), checked for what they promise, since no Docker daemon or
// systemd runs here: the Dockerfile's stages, user, health check and COPY sources; compose.yaml
// (parsed with the yaml package) wired to PostgreSQL and to settings Usher knows; the systemd
// unit through systemd-analyze (verify, and the offline security score); .env.example's names;
// and the LICENSE the OpenAPI document names. Starting from these files: production-install.test.ts
// and env-example.test.ts.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parseEnv } from 'node:util';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config.ts';
import { startApp } from '../helpers/app.ts';
import { describeUnless } from '../helpers/skip.ts';
import { configNames, copyParts, dockerfile, parseEnvLines, ROOT, read } from './packaging.ts';

describe('Dockerfile', () => {
  const steps = dockerfile();
  const last = Math.max(...steps.map((s) => s.stage));
  const final = steps.filter((s) => s.stage === last);
  const one = (keyword: string) => {
    const found = final.filter((s) => s.keyword === keyword);
    assert.equal(found.length, 1, `one ${keyword} in the final stage`);
    return found[0]!.args;
  };

  test('ISSUE 32: multi-stage on node:24 slim (bookworm), the production dependencies installed with npm ci --omit=dev in a build stage', () => {
    const froms = steps.filter((s) => s.keyword === 'FROM');
    assert.ok(froms.length >= 2, 'at least two stages');
    for (const from of froms) assert.match(from.args, /^node:24-bookworm-slim\b/, from.args);
    const install = steps.filter((s) => s.keyword === 'RUN' && /\bnpm ci\b/.test(s.args));
    assert.equal(install.length, 1);
    assert.ok(install[0]!.stage < last, 'installed in a build stage, not the final one');
    assert.match(install[0]!.args, /npm ci --omit=dev\b/);
    const copied = final.filter((s) => s.keyword === 'COPY').map((s) => copyParts(s.args));
    assert.ok(
      copied.some((c) => c.flags.from !== undefined && c.sources.some((s) => s.endsWith('node_modules'))),
      'the final stage takes node_modules from the build stage',
    );
    assert.ok(
      !final.some((s) => s.keyword === 'RUN' && /\bnpm (ci|install|i)\b/.test(s.args)),
      'and installs nothing itself',
    );
  });

  test('ISSUE 32: runs as a non-root user, with the data directory a volume it owns', () => {
    const user = one('USER');
    assert.doesNotMatch(user, /^(root|0)(:|$)/);
    const userAt = final.findIndex((s) => s.keyword === 'USER');
    const cmdAt = final.findIndex((s) => s.keyword === 'CMD');
    assert.ok(userAt < cmdAt, 'USER comes before CMD');
    const workdir = final.filter((s) => s.keyword === 'WORKDIR').at(-1)!.args;
    const volume = one('VOLUME');
    // The default DATABASE_URL (sqlite:./data/usher.db) and MAIL_OUTBOX (./data/outbox) land there.
    assert.equal(volume, `${workdir}/data`);
    assert.ok(
      final.some((s) => s.keyword === 'RUN' && s.args.includes(`chown ${user}:${user} ${volume}`)),
      'the volume is the user’s own',
    );
  });

  test('ISSUE 32: exposes the port it listens on, on every interface, and checks its health with node (no curl in slim)', () => {
    const env = Object.fromEntries(
      final
        .filter((s) => s.keyword === 'ENV')
        .flatMap((s) => s.args.split(/\s+/).map((pair) => pair.split('=') as [string, string])),
    );
    assert.equal(env.HOST, '0.0.0.0');
    assert.equal(one('EXPOSE'), env.PORT);
    const health = one('HEALTHCHECK');
    const cmd = /\bCMD\s+(\[.*\])$/.exec(health);
    assert.ok(cmd, health);
    const argv = JSON.parse(cmd[1]!) as string[];
    assert.equal(argv[0], 'node');
    assert.match(argv.join(' '), /\/healthz/);
    assert.doesNotMatch(health, /curl|wget/);
    assert.deepEqual(JSON.parse(one('CMD')), ['node', 'bin/server.mjs']);
    for (const [name] of Object.entries(env)) assert.ok(configNames().has(name), `${name} is a setting`);
  });

  test('ISSUE 32: every COPY source exists, and none is left out of the context by .dockerignore', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .filter((line) => line.trim() !== '' && !line.startsWith('#'));
    for (const step of steps.filter((s) => s.keyword === 'COPY')) {
      const { flags, sources } = copyParts(step.args);
      if (flags.from !== undefined) continue;
      for (const source of sources) {
        assert.ok(existsSync(join(ROOT, source)), `${source} exists`);
        assert.ok(!ignored.includes(source), `${source} is not in .dockerignore`);
      }
    }
    // And what must never reach an image: local data, secrets, installed modules, history.
    for (const kept of ['.git', 'node_modules', 'data', '.env', '*.db', '*.key'])
      assert.ok(ignored.includes(kept), `.dockerignore has ${kept}`);
  });
});

/** compose's ${NAME}, ${NAME:-default} and ${NAME:?message}, from `vars`. */
function interpolate(value: string, vars: Record<string, string>): string {
  return value.replace(/\$\{([A-Z_][A-Z0-9_]*)(?::([-?])([^}]*))?\}/g, (_, name, kind, rest) => {
    const set = vars[name] !== undefined && vars[name] !== '';
    if (set) return vars[name]!;
    if (kind === '-') return rest;
    if (kind === '?') throw new Error(`${name}: ${rest}`);
    return '';
  });
}

describe('compose.yaml', () => {
  const compose = parse(read('compose.yaml')) as {
    services: Record<string, Record<string, unknown>>;
    volumes: Record<string, unknown>;
  };
  const usher = compose.services.usher! as {
    build: unknown;
    depends_on: Record<string, { condition: string }>;
    environment: Record<string, string>;
    env_file: Array<{ path: string; required: boolean }>;
    ports: string[];
    volumes: string[];
  };
  const postgres = compose.services.postgres! as {
    image: string;
    environment: Record<string, string>;
    healthcheck: { test: string[] };
    volumes: string[];
  };

  test('ISSUE 32: usher is built from the Dockerfile and starts once PostgreSQL is healthy', () => {
    assert.ok(usher.build === '.' || (usher.build as { context: string }).context === '.', 'built here');
    assert.ok(existsSync(join(ROOT, 'Dockerfile')));
    assert.match(postgres.image, /^postgres:\d+/);
    assert.equal(postgres.healthcheck.test[0], 'CMD');
    assert.equal(postgres.healthcheck.test[1], 'pg_isready');
    assert.deepEqual(usher.depends_on, { postgres: { condition: 'service_healthy' } });
  });

  test('ISSUE 32: DATABASE_URL points at the postgres service, its user, password and database', () => {
    const vars = { ENCRYPTION_KEY: 'x' };
    const url = new URL(interpolate(usher.environment.DATABASE_URL!, vars));
    const pg = Object.fromEntries(
      Object.entries(postgres.environment).map(([k, v]) => [k, interpolate(v, vars)]),
    );
    assert.equal(url.protocol, 'postgres:');
    assert.equal(url.hostname, 'postgres');
    assert.equal(url.port, '5432');
    assert.equal(url.username, pg.POSTGRES_USER);
    assert.equal(url.password, pg.POSTGRES_PASSWORD);
    assert.equal(url.pathname, `/${pg.POSTGRES_DB}`);
    // One password for both, from the same variable when set.
    const set = { ENCRYPTION_KEY: 'x', POSTGRES_PASSWORD: 's3cret' };
    assert.equal(new URL(interpolate(usher.environment.DATABASE_URL!, set)).password, 's3cret');
    assert.equal(interpolate(postgres.environment.POSTGRES_PASSWORD!, set), 's3cret');
  });

  test('ISSUE 32: volumes for both, the published port is the one Usher listens on', () => {
    const declared = Object.keys(compose.volumes);
    const named = (mounts: string[]) => mounts.map((m) => m.split(':')[0]!);
    for (const mount of [...named(usher.volumes), ...named(postgres.volumes)])
      assert.ok(declared.includes(mount), `${mount} is declared`);
    assert.ok(
      usher.volumes.some((m) => m.endsWith(':/app/data')),
      'usher keeps /app/data',
    );
    assert.ok(postgres.volumes.some((m) => m.endsWith(':/var/lib/postgresql/data')));
    assert.equal(usher.ports.length, 1);
    assert.equal(usher.ports[0]!.split(':').at(-1), usher.environment.PORT);
    assert.equal(usher.environment.HOST, '0.0.0.0', 'reachable from outside the container');
  });

  test('ISSUE 32: every variable usher gets is a setting Usher knows, and together with .env.example they load', () => {
    const names = configNames();
    for (const name of Object.keys(usher.environment)) assert.ok(names.has(name), `${name} is a setting`);
    assert.deepEqual(usher.env_file, [{ path: '.env', required: false }]);
    // What the container would get: .env (from .env.example, with a key), then `environment`.
    const dotenv = Object.fromEntries(parseEnvLines(read('.env.example')));
    const key = Buffer.alloc(32, 7).toString('base64');
    const vars = { ...dotenv, ENCRYPTION_KEY: key };
    const environment = Object.fromEntries(
      Object.entries(usher.environment).map(([k, v]) => [k, interpolate(v, vars)]),
    );
    const config = loadConfig({ ...vars, ...environment });
    assert.equal(config.host, '0.0.0.0');
    assert.match(config.databaseUrl, /^postgres:\/\/usher:[^@]+@postgres:5432\/usher$/);
    assert.ok(config.encryptionKey?.equals(Buffer.alloc(32, 7)));
    // Without a key compose stops with a message naming it, rather than running PostgreSQL unsealed.
    assert.throws(
      () => interpolate(usher.environment.ENCRYPTION_KEY!, { ...dotenv }),
      /ENCRYPTION_KEY: set ENCRYPTION_KEY in \.env/,
    );
  });
});

describe('.env.example', () => {
  test('ISSUE 32: every variable in it, set or commented out, is a setting Usher knows, each once, plainly written', () => {
    const text = read('.env.example');
    const pairs = parseEnvLines(text);
    const names = configNames();
    assert.ok(pairs.length >= 10);
    for (const [name, value] of pairs) {
      assert.ok(names.has(name), `${name} is a setting`);
      // Quotes mean different things to compose, systemd and Node: none, so all three read alike.
      assert.doesNotMatch(value, /["'`$\\]/, name);
    }
    assert.equal(new Set(pairs.map(([n]) => n)).size, pairs.length, 'no name twice');
    for (const [, name] of text.matchAll(/^#\s*([A-Z][A-Z0-9_]*)=/gm))
      assert.ok(names.has(name!), `commented-out ${name} is a setting`);
    // Node's own reader agrees with the line reader the tests use.
    assert.deepEqual(parseEnv(text), Object.fromEntries(pairs));
    assert.doesNotThrow(() => loadConfig(Object.fromEntries(pairs)), 'the settings as written load');
  });
});

const unit = read('deploy/usher.service');
/** The unit's settings: section → key → values (a key may repeat). */
function unitSettings(text: string): Record<string, Record<string, string[]>> {
  const sections: Record<string, Record<string, string[]>> = {};
  let section = '';
  for (const line of text.split('\n')) {
    if (line.trim() === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[(\w+)\]$/.exec(line);
    if (header) {
      section = header[1]!;
      sections[section] = {};
      continue;
    }
    const [key, ...value] = line.split('=');
    const values = sections[section]![key!] ?? [];
    values.push(value.join('='));
    sections[section]![key!] = values;
  }
  return sections;
}

describe('deploy/usher.service', () => {
  const service = unitSettings(unit).Service!;
  const get = (key: string) => {
    assert.ok(service[key], `${key} is set`);
    return service[key].at(-1)!;
  };

  test('ISSUE 32: runs server.mjs as a dedicated user, in its state directory, with the .env file', () => {
    assert.equal(get('User'), 'usher');
    assert.equal(get('Group'), 'usher');
    assert.match(get('ExecStart'), /^\/usr\/bin\/node \/opt\/usher\/bin\/server\.mjs$/);
    assert.equal(get('StateDirectory'), 'usher');
    // The relative defaults (sqlite:./data/usher.db, ./data/outbox) resolve into the state directory.
    assert.equal(get('WorkingDirectory'), '/var/lib/usher');
    assert.match(get('EnvironmentFile'), /^-?\/etc\/usher\/usher\.env$/);
    assert.equal(get('Restart'), 'on-failure');
    for (const line of service.Environment ?? [])
      assert.ok(configNames().has(line.split('=')[0]!), `${line} is a setting`);
  });

  test('ISSUE 32: hardened: no new privileges, a read-only system, no capabilities, a syscall filter', () => {
    for (const [key, value] of [
      ['NoNewPrivileges', 'yes'],
      ['ProtectSystem', 'strict'],
      ['ProtectHome', 'yes'],
      ['PrivateTmp', 'yes'],
      ['PrivateDevices', 'yes'],
      ['RestrictSUIDSGID', 'yes'],
      ['CapabilityBoundingSet', ''],
      ['UMask', '0077'],
    ])
      assert.equal(get(key!), value, key);
    assert.ok(service.SystemCallFilter?.includes('@system-service'));
    assert.equal(service.MemoryDenyWriteExecute, undefined, 'V8 needs executable memory it writes');
  });

  const analyze = spawnSync('systemd-analyze', ['--version']).status === 0;
  describeUnless(analyze ? false : 'systemd-analyze is not installed', 'systemd-analyze', () => {
    /** The unit in a folder of its own; ExecStart's node is this one when /usr/bin/node is missing. */
    const unitFile = () => {
      const dir = mkdtempSync(join(tmpdir(), 'usher-unit-'));
      const file = join(dir, 'usher.service');
      const text = existsSync('/usr/bin/node') ? unit : unit.replace('/usr/bin/node', process.execPath);
      writeFileSync(file, text);
      return file;
    };

    test('ISSUE 32: systemd-analyze verify finds nothing to say', () => {
      const run = spawnSync('systemd-analyze', ['verify', unitFile()], { encoding: 'utf8' });
      assert.equal(run.status, 0, run.stderr);
      // An unknown or misspelt key is only a warning, exit code 0: any line at all fails the test.
      assert.equal(run.stderr.trim(), '', run.stderr);
    });

    test('ISSUE 32: systemd-analyze security rates the unit OK (exposure 2.0 or lower)', () => {
      const run = spawnSync('systemd-analyze', ['security', '--offline=yes', unitFile()], {
        encoding: 'utf8',
      });
      const level = /Overall exposure level for usher\.service: ([\d.]+) (\w+)/.exec(run.stdout);
      assert.ok(level, run.stdout + run.stderr);
      assert.ok(Number(level[1]) <= 2, `exposure ${level[1]} ${level[2]}`);
    });
  });
});

describe('LICENSE', () => {
  test('ISSUE 32: the MIT licence the OpenAPI document names, for the Usher authors', async () => {
    const text = read('LICENSE');
    assert.match(text, /^MIT License\n\nCopyright \(c\) 2026 The Usher authors\n/);
    assert.match(text, /THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND/);
    const t = await startApp({ kind: 'sqlite', url: 'sqlite::memory:' }, 'b');
    try {
      const document = (await t.get('/openapi.json')).json() as {
        info: { license: { name: string; identifier: string } };
      };
      assert.deepEqual(document.info.license, { name: 'MIT', identifier: 'MIT' });
    } finally {
      await t.close();
    }
  });
});
