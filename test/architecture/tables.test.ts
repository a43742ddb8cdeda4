// Each table belongs to one feature, and only that feature's code reads or writes it (issue 41,
// item 3): another feature goes through what the owner exports. Where one statement must span
// features (for speed on a hot path, or to be atomic), it is listed below as an exception, with
// why. The check reads src/ as Node runs it (type-stripped, with scripts/layers.ts's scanner, so
// comments are skipped) and finds the tables each file names in a query: the first argument of
// selectFrom, insertInto, updateTable, deleteFrom, the joins and sql.table; a `table:` handed to
// db/range-pages.ts; and a table after from, join, into or update in any string or template (raw
// SQL). Names that are no table (a WITH's, an alias) are left alone. Foreign-key cascades are the
// database's crossing, not a repository's, and are not seen. The owners are docs/tables.md's.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { strip, tokenize } from '../../scripts/layers.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SRC = join(ROOT, 'src');
const TABLES_DOC = join(ROOT, 'docs', 'tables.md');

/**
 * Table → the folder of src/ that owns it. A feature's migrations and its `tables.ts` (the
 * `Tables` augmentation) say it for every table made after 2026-11-24, and the test holds this map
 * to them; db/migrations' history and db/schema.ts's `Tables` say nothing of owners, so for those
 * tables this map is the word: the folder whose repository has always kept the table.
 */
const OWNERS: Readonly<Record<string, string>> = {
  users: 'users',
  user_counts: 'users',
  email_key_collisions: 'users',
  password_credentials: 'passwords',
  sessions: 'sessions',
  signin_attempts: 'signin',
  signin_devices: 'signin',
  signin_tickets: 'signin',
  totp_factors: 'totp',
  recovery_codes: 'totp',
  passkeys: 'passkeys',
  webauthn_challenges: 'passkeys',
  oauth_states: 'oauth',
  identities: 'oauth',
  mail_signins: 'mail-signin',
  reset_requests: 'recovery',
  account_tokens: 'tokens',
  mail_outbox: 'mail',
  limit_events: 'kernel',
  oidc_models: 'oidc',
  oidc_login_baselines: 'oidc',
  oidc_clients: 'oidc',
  oidc_keys: 'oidc',
  oidc_consents: 'oidc',
  users_search: 'admin',
  audit_events: 'audit',
  webhooks: 'webhooks',
  webhook_events: 'webhooks',
  webhook_deliveries: 'webhooks',
  products: 'catalog',
  reviews: 'catalog',
  product_counts: 'catalog',
  review_counts: 'catalog',
  creation_limits: 'catalog',
};

/** Made by one migration and dropped by a later one. */
const DROPPED = new Set(['signin_failures']);

interface Exception {
  /** Under src/. */
  file: string;
  /** The other features' tables it names. */
  tables: readonly string[];
  why: string;
}

/** The statements that span features, each kept on purpose (docs/tables.md says why, at length). */
const EXCEPTIONS: readonly Exception[] = [
  {
    file: 'auth/signer-repository.ts',
    tables: ['users', 'password_credentials', 'totp_factors'],
    why: "POST /api/signin's one read: the account, its hash and its TOTP factor in one round trip",
  },
  {
    file: 'signin/grant-repository.ts',
    tables: ['users', 'sessions', 'password_credentials'],
    why: 'the grant: the session fenced on the password hash, with the last sign-in, in one statement',
  },
  {
    file: 'sessions/repository.ts',
    tables: ['users'],
    why: "GET /api/session and every signed-in request: the session and its user's row in one query",
  },
  {
    file: 'admin/repository.ts',
    tables: ['users'],
    why: "the admin user search, written for the indexes admin/'s migration 0019 made on users",
  },
];

const CALLS = new Set([
  'selectFrom',
  'insertInto',
  'replaceInto',
  'updateTable',
  'deleteFrom',
  'mergeInto',
  'innerJoin',
  'leftJoin',
  'rightJoin',
  'fullJoin',
  'crossJoin',
  'innerJoinLateral',
  'leftJoinLateral',
  'crossJoinLateral',
  'table',
]);
/** Raw SQL as Usher writes it (lower case): the table after these words. */
const RAW = /(?:^|[^\w.])(?:from|join|into|update)\s+"?([a-z_][a-z0-9_]*)/g;

/** Every name a piece of TypeScript uses as a table in a query, known table or not. */
function tablesNamed(source: string): Set<string> {
  const tokens = tokenize(strip(source));
  const found = new Set<string>();
  // `'webhook_deliveries as d'` names webhook_deliveries.
  const add = (text: string | undefined) => {
    const name = text?.trim().split(/\s+/)[0];
    if (name) found.add(name);
  };
  const literal = (k: number) => {
    const t = tokens[k];
    return t?.kind === 'string' || (t?.kind === 'template' && t.value !== undefined) ? t.value : undefined;
  };
  for (let k = 0; k < tokens.length; k++) {
    const t = tokens[k];
    if (!t) continue;
    if (t.kind === 'name' && CALLS.has(t.text) && tokens[k + 1]?.text === '(') {
      // The first argument: a name, or an array of names.
      let j = k + 2;
      const list = tokens[j]?.text === '[';
      if (list) j++;
      for (let name = literal(j); name !== undefined; name = literal(j)) {
        add(name);
        if (!list || tokens[j + 1]?.text !== ',') break;
        j += 2;
      }
    }
    if (t.kind === 'name' && t.text === 'table' && tokens[k + 1]?.text === ':') add(literal(k + 2));
    const text = t.kind === 'string' ? t.value : t.kind === 'template' ? t.part : undefined;
    if (text !== undefined) for (const match of text.matchAll(RAW)) add(match[1]);
  }
  return found;
}

/** Files under `dir`, relative to it with `/`, sorted. */
function listFiles(dir: string, root = dir): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...listFiles(path, root));
    else if (entry.isFile() && /\.ts$/.test(entry.name) && !entry.name.endsWith('.d.ts'))
      files.push(relative(root, path).split(sep).join('/'));
  }
  return files.sort();
}

/** The folder a file of src/ is in (the files directly in src/ are the root's, which owns nothing). */
const folderOf = (file: string) => (file.includes('/') ? (file.split('/')[0] as string) : '(root)');
const isMigration = (file: string) => file.split('/').includes('migrations');

interface Crossing {
  file: string;
  table: string;
  owner: string;
}

/** Each (file, table) where a file names a known table its folder does not own. */
function crossings(sources: ReadonlyMap<string, string>): Crossing[] {
  const found: Crossing[] = [];
  for (const [file, source] of sources) {
    if (isMigration(file)) continue;
    for (const table of [...tablesNamed(source)].sort()) {
      const owner = OWNERS[table];
      if (owner !== undefined && owner !== folderOf(file)) found.push({ file, table, owner });
    }
  }
  return found;
}

/** What the check says of a tree: crossings not listed, and listed ones that no longer occur. */
function check(sources: ReadonlyMap<string, string>, exceptions: readonly Exception[]) {
  const listed = new Set(exceptions.flatMap((e) => e.tables.map((table) => `${e.file} ${table}`)));
  const all = crossings(sources);
  const seen = new Set(all.map((c) => `${c.file} ${c.table}`));
  return {
    unlisted: all
      .filter((c) => !listed.has(`${c.file} ${c.table}`))
      .map(
        (c) =>
          `src/${c.file} queries ${c.table}, which ${c.owner}/ owns: go through what ${c.owner}/ exports ` +
          '(docs/tables.md), or list the statement as an exception, with why',
      ),
    stale: [...listed].filter((key) => !seen.has(key)),
  };
}

const realSources = () =>
  new Map(listFiles(SRC).map((file) => [file, readFileSync(join(SRC, file), 'utf8')] as const));

/** The keys of each `interface Tables { … }` in a source. */
function tablesDeclared(source: string): string[] {
  const keys: string[] = [];
  for (const match of source.matchAll(/interface Tables \{([^}]*)\}/g))
    for (const key of (match[1] as string).matchAll(/^\s*([a-z_][a-z0-9_]*)\s*:/gm))
      keys.push(key[1] as string);
  return keys;
}

/** The tables a migration's source makes. */
const tablesMade = (source: string) => [
  ...[...source.matchAll(/createTable\(\s*'([a-z_][a-z0-9_]*)'/g)].map((m) => m[1] as string),
  ...[...source.matchAll(/create (?:virtual )?table (?:if not exists )?([a-z_][a-z0-9_]*)/g)].map(
    (m) => m[1] as string,
  ),
];

describe('each table is queried by the feature that owns it', () => {
  test('the scanner finds a table in every form of query, and nothing in comments', () => {
    const named = tablesNamed(
      [
        "import { sql, type Kysely } from 'kysely';",
        'type Row = { a: string };',
        '// db.selectFrom("in_a_comment")',
        '/* db.deleteFrom("in_a_block_comment") */',
        'export async function f(db: Kysely<any>, q: string) {',
        "  await db.selectFrom('t_select as s').innerJoin('t_join', 'a', 'b').leftJoin('t_left as l', 'a', 'b');",
        "  await db.insertInto('t_insert').values({}).execute();",
        "  await db.updateTable('t_update').set({}).execute();",
        "  await db.deleteFrom('t_delete').execute();",
        "  await db.with('cte', (d) => d.selectFrom('t_in_cte')).selectFrom('cte').execute();",
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a template literal's source, as text
        '  await sql<Row>`select 1 from t_raw_from join t_raw_join on 1 = 1 where ${q}`.execute(db);',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a template literal's source, as text
        '  await sql`delete from t_raw_delete where x in (${sql`select y from t_nested`})`.execute(db);',
        '  await sql`insert into "t_quoted" values (1); update t_raw_update set a = 1`.execute(db);',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a template literal's source, as text
        "  await sql`select * from ${sql.table('t_sql_table')}`.execute(db);",
        "  const counts = { table: 't_counts', column: 'n' };",
        "  const words = 'a label, not a query: t_label';",
        '  return [counts, words, /from t_regex/.test(q) ? q.split("/") : 1 / 2];',
        '}',
      ].join('\n'),
    );
    assert.deepEqual([...named].sort(), [
      'cte',
      't_counts',
      't_delete',
      't_in_cte',
      't_insert',
      't_join',
      't_left',
      't_nested',
      't_quoted',
      't_raw_delete',
      't_raw_from',
      't_raw_join',
      't_raw_update',
      't_select',
      't_sql_table',
      't_update',
    ]);
  });

  test("fails on a repository that queries another feature's table, naming the file, the table and its owner", () => {
    const sources = new Map([
      ['signin/device-repository.ts', "export const q = (db) => db.selectFrom('signin_devices');"],
      ['totp/repository.ts', "export const q = (db) => db.updateTable('signin_devices').set({});"],
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a template literal's source, as text
      ['users/repository.ts', 'export const q = (db) => sql`delete from sessions where user_id = ${1}`;'],
    ]);
    const { unlisted, stale } = check(sources, []);
    assert.deepEqual(unlisted, [
      'src/totp/repository.ts queries signin_devices, which signin/ owns: go through what signin/ exports ' +
        '(docs/tables.md), or list the statement as an exception, with why',
      'src/users/repository.ts queries sessions, which sessions/ owns: go through what sessions/ exports ' +
        '(docs/tables.md), or list the statement as an exception, with why',
    ]);
    assert.deepEqual(stale, []);
    // Listed, the crossing passes; a listed one that is gone fails, so the list only shrinks.
    const listed = check(sources, [
      { file: 'totp/repository.ts', tables: ['signin_devices'], why: 'a test' },
      { file: 'users/repository.ts', tables: ['sessions', 'passkeys'], why: 'a test' },
    ]);
    assert.deepEqual(listed.unlisted, []);
    assert.deepEqual(listed.stale, ['users/repository.ts passkeys']);
  });

  test('a migration may touch any table: the feature that owns it wrote it', () => {
    const sources = new Map([
      ['users/migrations/0001.ts', "await db.schema.alterTable('sessions'); sql`update sessions set a = 1`;"],
    ]);
    assert.deepEqual(check(sources, []).unlisted, []);
  });

  test('src/ queries no table of another feature but the exceptions, and each exception still occurs', () => {
    const { unlisted, stale } = check(realSources(), EXCEPTIONS);
    assert.deepEqual(unlisted, [], unlisted.join('\n'));
    assert.deepEqual(
      stale,
      [],
      `exceptions that no longer occur (remove them here and in docs/tables.md): ${stale}`,
    );
  });

  test('every table has an owner, and the owner the migrations and the Tables declarations say', () => {
    const sources = realSources();
    const problems: string[] = [];
    // Declared in a feature's folder (its tables.ts or repository), the table is that feature's.
    for (const [file, source] of sources) {
      if (isMigration(file) || file === 'db/schema.ts') continue;
      for (const table of tablesDeclared(source)) {
        if (OWNERS[table] === undefined) problems.push(`${table} (declared in src/${file}) has no owner`);
        else if (OWNERS[table] !== folderOf(file))
          problems.push(`${table} is declared in src/${file} but owned by ${OWNERS[table]}/`);
      }
    }
    for (const table of tablesDeclared(sources.get('db/schema.ts') ?? ''))
      if (OWNERS[table] === undefined) problems.push(`${table} (db/schema.ts) has no owner`);
    const declared = new Set(
      [...sources].flatMap(([file, source]) => (isMigration(file) ? [] : tablesDeclared(source))),
    );
    // Made by a feature's migration and declared nowhere (users_search): that feature's.
    for (const [file, source] of sources) {
      if (!isMigration(file)) continue;
      for (const table of tablesMade(source)) {
        if (DROPPED.has(table)) continue;
        if (OWNERS[table] === undefined) problems.push(`${table} (made by src/${file}) has no owner`);
        else if (folderOf(file) !== 'db' && !declared.has(table) && OWNERS[table] !== folderOf(file))
          problems.push(`${table} is made by src/${file} but owned by ${OWNERS[table]}/`);
      }
    }
    assert.deepEqual(problems, []);
  });

  test('docs/tables.md lists every table with the owner this check holds it to, and the exceptions', () => {
    const doc = readFileSync(TABLES_DOC, 'utf8');
    const rows = Object.fromEntries(
      [...doc.matchAll(/^\| `([a-z_][a-z0-9_]*)` \| `([a-z-]+)\/` \|/gm)].map((m) => [m[1], m[2]]),
    );
    assert.deepEqual(rows, { ...OWNERS });
    for (const exception of EXCEPTIONS)
      assert.ok(doc.includes(`src/${exception.file}`), `docs/tables.md names src/${exception.file}`);
  });
});
