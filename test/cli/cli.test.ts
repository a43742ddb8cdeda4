// The admin CLI end to end: real processes on the same database as a running server. Each test
// makes the users it needs (its own emails), so the tests pass in any order.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { schemaMigrations } from '../../src/features.ts';
import { sessionToken } from '../helpers/app.ts';
import { openTestDatabase } from '../helpers/db.ts';
import { freePort, postJson, runProcess, type ServerProcess, startServer } from '../helpers/process.ts';
import { describeUnless } from '../helpers/skip.ts';
import { startSmtp } from '../helpers/smtp.ts';
import { describeEachStore, freshDatabaseUrl } from '../helpers/stores.ts';

/** The entry `npx usher` and `npm run cli` run: the Node version check, then src/cli/main.ts. */
const CLI = fileURLToPath(new URL('../../bin/usher.mjs', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

const cli = (env: Record<string, string>, args: string[], input = '') =>
  runProcess(process.execPath, [CLI, ...args], env, input);

/** Every command and subcommand the CLI has; each must answer --help. */
const COMMANDS = [
  ['users', 'add'],
  ['users', 'list'],
  ['users', 'import'],
  ['users', 'set-password'],
  ['users', 'delete'],
  ['users', 'verify'],
  ['users', 'set-role'],
  ['mail', 'send-test'],
  ['clients', 'add'],
  ['clients', 'list'],
  ['clients', 'remove'],
  ['clients', 'rotate-secret'],
  ['keys', 'list'],
  ['keys', 'rotate'],
  ['keys', 'retire'],
  ['migrate'],
];

// Help and usage errors need no settings and no database: a store of its own would add nothing.
describe('admin CLI help', () => {
  // A bad setting and an unopenable database: help and usage errors come before either is read.
  const broken = {
    PORT: 'not-a-port',
    DATABASE_URL: `sqlite:${join(tmpdir(), `usher-no-such-dir-${process.pid}`, 'u.db')}`,
  };

  test('ISSUE 32: every command and subcommand answers --help (and "help COMMAND") on stdout, whatever the settings', async () => {
    for (const command of COMMANDS) {
      const what = command.join(' ');
      for (const args of [
        [...command, '--help'],
        ['help', ...command],
      ]) {
        const run = await cli(broken, args);
        assert.equal(run.code, 0, `${args.join(' ')}: ${run.stderr}`);
        assert.equal(run.stderr, '', args.join(' '));
        assert.ok(run.stdout.startsWith(`Usage: usher ${what}`), `${args.join(' ')}: ${run.stdout}`);
      }
    }
    // A group lists its own commands, every one of them.
    for (const group of ['users', 'mail', 'clients', 'keys']) {
      for (const args of [
        [group, '--help'],
        ['help', group],
        [group, '-h'],
      ]) {
        const run = await cli(broken, args);
        assert.equal(run.code, 0, `${args.join(' ')}: ${run.stderr}`);
        assert.ok(run.stdout.startsWith(`Usage: usher ${group} <command>`), run.stdout);
        for (const command of COMMANDS.filter(([first]) => first === group))
          assert.match(
            run.stdout,
            new RegExp(`^  ${command.join(' ')}\\b`, 'm'),
            `${group} lists ${command.join(' ')}`,
          );
      }
    }
    const main = await cli(broken, ['--help']);
    for (const command of COMMANDS)
      assert.match(
        main.stdout,
        new RegExp(`^  ${command.join(' ')}\\b`, 'm'),
        `the help lists ${command.join(' ')}`,
      );
  });

  test('ISSUE 32: an unknown command or subcommand, or a group alone, exits 2 with the usage on stderr', async () => {
    for (const [args, message, usage] of [
      [['frobnicate'], 'unknown command "frobnicate"', 'Usage: usher <command> [options]'],
      [['frobnicate', '--help'], 'unknown command "frobnicate"', 'Usage: usher <command> [options]'],
      [
        ['users', 'frobnicate'],
        'unknown command "users frobnicate"',
        'Usage: usher users <command> [options]',
      ],
      [
        ['keys', 'frobnicate', '--help'],
        'unknown command "keys frobnicate"',
        'Usage: usher keys <command> [options]',
      ],
      [['help', 'frobnicate'], 'unknown command "frobnicate"', 'Usage: usher <command> [options]'],
      [['users'], '"usher users" needs a command', 'Usage: usher users <command> [options]'],
      [['clients'], '"usher clients" needs a command', 'Usage: usher clients <command> [options]'],
    ] as const) {
      const what = args.join(' ');
      const run = await cli(broken, [...args]);
      assert.equal(run.code, 2, what);
      assert.equal(run.stdout, '', what);
      assert.equal(run.stderr.split('\n')[0], `usher: ${message}`, what);
      assert.equal(run.stderr.split('\n')[2], usage, what);
      assert.match(run.stderr, /^Commands:$/m, what);
    }
  });
});

describeEachStore('admin CLI', (store) => {
  let server: ServerProcess;
  let env: Record<string, string>;
  let dir: string;
  before(async () => {
    env = { DATABASE_URL: store.url };
    server = await startServer(env);
    dir = mkdtempSync(join(tmpdir(), 'usher-cli-'));
  });
  after(() => server.stop());

  const signin = (email: string, password: string) =>
    postJson(`${server.url}/api/signin`, { email, password });
  const addUser = async (email: string, name: string, password: string) => {
    const run = await cli(env, ['users', 'add', '--email', email, '--name', name], `${password}\n`);
    assert.equal(run.code, 0, run.stderr);
    return run;
  };
  const listJson = async () =>
    (await cli(env, ['users', 'list', '--json'])).stdout
      .split('\n')
      // No users yet (this test ran first): no lines at all, not one empty one.
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as Record<string, string>);

  test('CONTRACT: users add takes the password from standard input, and the user signs in on the running server', async () => {
    const run = await cli(
      env,
      ['users', 'add', '--email', 'Ada@Example.com', '--name', 'Ada'],
      'cli-password-1\n',
    );
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^created user \d+\tAda@Example\.com\tAda\t/);
    assert.ok(!run.stdout.includes('cli-password-1'));
    assert.equal((await signin('ada@example.com', 'cli-password-1')).status, 200);
  });

  test('CONTRACT: a password is never taken from the command line', async () => {
    const run = await cli(env, [
      'users',
      'add',
      '--email',
      'x@example.com',
      '--name',
      'X',
      '--password',
      'secret-pw-99',
    ]);
    assert.equal(run.code, 2);
    assert.ok(!run.stdout.includes('secret-pw-99') && !run.stderr.includes('secret-pw-99'));
  });

  test('CONTRACT: errors go to stderr with a non-zero exit: bad input, duplicates, unknown commands, missing options', async () => {
    const weak = await cli(env, ['users', 'add', '--email', 'w@example.com', '--name', 'W'], 'short\n');
    assert.equal(weak.code, 1);
    assert.match(weak.stderr, /VALIDATION_FAILED: password/);
    await addUser('Dup@Example.com', 'First', 'cli-password-2');
    const dup = await cli(
      env,
      ['users', 'add', '--email', 'DUP@example.com', '--name', 'Dup'],
      'cli-password-3\n',
    );
    assert.equal(dup.code, 1);
    assert.match(dup.stderr, /EMAIL_TAKEN/);
    const unknown = await cli(env, ['users', 'frobnicate']);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown command/);
    const missing = await cli(env, ['users', 'delete']);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /--email is required/);
    assert.match(unknown.stderr, /^Commands:$/m, 'an unknown command gets the list of commands');
    for (const run of [weak, dup, unknown, missing]) assert.equal(run.stdout, '');
  });

  test('CONTRACT: --help on every command', async () => {
    for (const args of [
      [],
      ['--help'],
      ['users', 'add', '--help'],
      ['users', 'list', '--help'],
      ['users', 'import', '--help'],
      ['users', 'set-password', '--help'],
      ['users', 'delete', '--help'],
      ['migrate', '--help'],
    ]) {
      const run = await cli(env, args);
      assert.equal(run.code, 0, args.join(' '));
      assert.match(run.stdout, /^Usage: usher /, args.join(' '));
    }
  });

  test('ISSUE 32: an empty standard input says "no password read" (exit 2) and changes nothing', async () => {
    for (const [input, email] of [
      ['', 'empty-stdin@example.com'],
      ['\n', 'empty-line@example.com'],
      ['\r\nlater-line-pass-1\n', 'empty-crlf@example.com'],
    ] as const) {
      const run = await cli(env, ['users', 'add', '--email', email, '--name', 'Empty'], input);
      assert.equal(run.code, 2, JSON.stringify(input));
      assert.equal(run.stdout, '');
      assert.match(run.stderr, /^usher: no password read: standard input was empty/, run.stderr);
      assert.match(run.stderr, /^Usage: usher users add --email E --name N$/m);
      assert.doesNotMatch(run.stderr, /VALIDATION_FAILED|8 characters/);
      const listed = await listJson();
      assert.ok(!listed.some((u) => u.email === email), 'no account was made');
    }
    await addUser('empty-setpw@example.com', 'Set', 'kept-pass-word-1');
    const run = await cli(env, ['users', 'set-password', '--email', 'empty-setpw@example.com'], '');
    assert.equal(run.code, 2);
    assert.match(run.stderr, /^usher: no password read/);
    assert.equal((await signin('empty-setpw@example.com', 'kept-pass-word-1')).status, 200, 'unchanged');
  });

  test('ISSUE 15: a usage error shows the usage of the command meant, not the whole help, with exit code 2', async () => {
    for (const [args, message, usage] of [
      [['users', 'set-password'], '--email is required', 'Usage: usher users set-password --email E'],
      [
        ['users', 'add', '--email', 'u@example.com'],
        '--name is required',
        'Usage: usher users add --email E --name N',
      ],
      [['users', 'import'], 'users import needs a FILE', 'Usage: usher users import FILE'],
      [['users', 'list', '--jsn'], "Unknown option '--jsn'", 'Usage: usher users list [--json]'],
      [
        ['mail', 'send-test', '--to'],
        "Option '--to <value>' argument missing",
        'Usage: usher mail send-test --to E',
      ],
    ]) {
      const run = await cli(env, args as string[]);
      const what = (args as string[]).join(' ');
      assert.equal(run.code, 2, what);
      assert.equal(run.stdout, '', what);
      const lines = run.stderr.split('\n');
      assert.ok(lines[0]!.startsWith(`usher: ${message}`), `${what}: ${run.stderr}`);
      assert.equal(lines[2], usage, what);
      assert.match(run.stderr, /Run "usher [a-z -]+ --help" for more\.\n$/, what);
      assert.doesNotMatch(run.stderr, /Commands:/, what);
    }
  });

  test('CONTRACT: users list prints every user, as a table or JSON lines', async () => {
    await addUser('Lister@Example.com', 'Lister', 'cli-password-4');
    const table = await cli(env, ['users', 'list']);
    assert.equal(table.code, 0);
    assert.match(table.stdout, /^ *ID {2}EMAIL +NAME +CREATED\n/);
    assert.match(table.stdout, /\n *\d+ {2}Lister@Example\.com +Lister +\d{4}-\d\d-\d\dT/);
    const rows = await listJson();
    assert.ok(rows.some((r) => r.email === 'Lister@Example.com'));
    assert.ok(rows.every((r) => Object.keys(r).sort().join() === 'createdAt,email,id,name'));
    assert.ok(rows.every((r) => typeof r.id === 'number'));
  });

  // A database of its own, so the table holds exactly these rows.
  const listOf = async (args: string[]) => {
    const fresh = await freshDatabaseUrl(store.kind);
    try {
      const database = openTestDatabase({ kind: store.kind, url: fresh.url });
      try {
        await database.migrate(schemaMigrations());
        const at = '2026-11-22T10:00:00.000Z';
        await database.db
          .insertInto('users')
          .values(
            [
              [1n, 'ada@example.com', 'Ada Lovelace'],
              [2n, 'tab@example.com', 'Tab\there'],
              [2n ** 53n + 1n, 'li@example.com', '李小龙'],
            ].map(([id, email, name]) => ({
              id: id as bigint,
              email: email as string,
              email_key: email as string,
              name: name as string,
              created_at: at,
              updated_at: at,
            })),
          )
          .execute();
      } finally {
        await database.close();
      }
      return await cli({ DATABASE_URL: fresh.url }, args);
    } finally {
      await fresh.drop();
    }
  };

  test('ISSUE 15: users list is a table with a header row and columns aligned on the escaped text, wide characters taking two columns', async () => {
    const run = await listOf(['users', 'list']);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(
      run.stdout,
      [
        '              ID  EMAIL            NAME          CREATED',
        '               1  ada@example.com  Ada Lovelace  2026-11-22T10:00:00.000Z',
        '               2  tab@example.com  Tab\\there     2026-11-22T10:00:00.000Z',
        '9007199254740993  li@example.com   李小龙        2026-11-22T10:00:00.000Z',
        '',
      ].join('\n'),
    );
  });

  test('ISSUE 15: users list --json writes ids as JSON numbers, exact above 2^53', async () => {
    const run = await listOf(['users', 'list', '--json']);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(
      run.stdout,
      [
        '{"id":1,"email":"ada@example.com","name":"Ada Lovelace","createdAt":"2026-11-22T10:00:00.000Z"}',
        '{"id":2,"email":"tab@example.com","name":"Tab\\there","createdAt":"2026-11-22T10:00:00.000Z"}',
        '{"id":9007199254740993,"email":"li@example.com","name":"李小龙","createdAt":"2026-11-22T10:00:00.000Z"}',
        '',
      ].join('\n'),
    );
  });

  test('ISSUE 15: npx usher users list --json, in the repository, prints only JSON lines (no npm banner)', async () => {
    // A user of its own: the suite's other tests may have left none, whatever order they ran in.
    const email = `npx-${Date.now()}@example.com`;
    await addUser(email, 'Npx', 'correct horse battery');
    const run = await runProcess(
      'npx',
      ['usher', 'users', 'list', '--json'],
      // This Node first on PATH, as for a person who installed Node 24; HOME for npm's cache.
      {
        PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
        HOME: process.env.HOME ?? '',
        ...env,
      },
      '',
      ROOT,
    );
    assert.equal(run.code, 0, run.stderr);
    const lines = run.stdout.split('\n');
    assert.equal(lines.pop(), '', 'ends with a line break');
    assert.ok(lines.length > 0, run.stdout);
    for (const line of lines) {
      const row = JSON.parse(line) as Record<string, unknown>;
      assert.equal(typeof row.id, 'number', line);
    }
    assert.ok(
      lines.some((line) => JSON.parse(line).email === email),
      run.stdout,
    );
  });

  test('ISSUE 11: users list shows control characters and bidi overrides in names and emails as escapes, never raw', async () => {
    // The API refuses such names; a row written before that rule, or by another tool, still
    // reaches the admin's terminal through the CLI.
    const name = 'Mallory\x1b[2J\x07\r\n\u009b31m\u202eevil\u2028\u2066\x7f\ttab\\end';
    const email = 'mallory\x1b]0;owned\x07@example.com';
    const database = openTestDatabase(store);
    try {
      const now = new Date().toISOString();
      await database.db
        .insertInto('users')
        .values({
          email,
          email_key: email.toLowerCase(),
          name,
          created_at: now,
          updated_at: now,
        })
        .execute();
    } finally {
      await database.close();
    }
    // Tab and line feed are the table's own separators; no other control character may come out.
    const unsafe = /(?![\t\n])[\p{Cc}\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;

    const table = await cli(env, ['users', 'list']);
    assert.equal(table.code, 0, table.stderr);
    assert.doesNotMatch(table.stdout, unsafe);
    const row = table.stdout.split('\n').find((line) => line.includes('Mallory'));
    assert.ok(row, table.stdout);
    assert.match(row, /^ *\d+ {2}\S+ +\S+ +\d{4}-/, `one row of four columns: ${JSON.stringify(row)}`);
    assert.ok(row.includes('  mallory\\x1b]0;owned\\x07@example.com  '), row);
    assert.ok(
      row.includes('  Mallory\\x1b[2J\\x07\\r\\n\\x9b31m\\u202eevil\\u2028\\u2066\\x7f\\ttab\\\\end  '),
      row,
    );

    const json = await cli(env, ['users', 'list', '--json']);
    assert.equal(json.code, 0, json.stderr);
    assert.doesNotMatch(json.stdout, unsafe);
    const rows = json.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, string>);
    const parsed = rows.find((r) => r.name?.startsWith('Mallory'));
    assert.deepEqual([parsed?.name, parsed?.email], [name, email], 'JSON lines give the exact text back');
  });

  test('CONTRACT: users import takes JSON lines, checks every row first, refuses the whole file for a bad one (by line), and is safe to rerun', async () => {
    const good = [
      JSON.stringify({ email: 'j1@example.com', name: 'J One', password: 'import-pass-1' }),
      JSON.stringify({ email: 'j2@example.com', name: 'J Two', password: 'import-pass-2' }),
      '',
    ];
    const bad = [
      '{not json',
      JSON.stringify({ email: 'not-an-email', name: 'Bad', password: 'import-pass-3' }),
      JSON.stringify({ email: 'j3@example.com', name: 'J Three', password: 'password' }),
    ];
    const rest = [
      JSON.stringify({ email: 'j4@example.com', name: 'J Four' }),
      JSON.stringify({ email: 'J1@EXAMPLE.COM', name: 'Dup', password: 'import-pass-9' }),
    ];
    const refusedFile = join(dir, `users-refused-${store.kind}.jsonl`);
    writeFileSync(refusedFile, [...good, ...bad, ...rest].join('\n'));
    const refused = await cli(env, ['users', 'import', refusedFile]);
    assert.equal(refused.code, 1, 'rows were refused');
    assert.match(refused.stdout, /imported 0, skipped 0 \(already registered\), refused 3, of 7 rows/);
    const refusedLines = [...refused.stderr.matchAll(/^line (\d+): (.*)$/gm)].map((m) => [
      Number(m[1]),
      m[2],
    ]);
    assert.deepEqual(
      refusedLines.map(([line]) => line),
      [4, 5, 6],
    );
    assert.match(String(refusedLines[1]![1]), /^email:/);
    assert.match(String(refusedLines[2]![1]), /^password: .*common/);
    assert.match(refused.stderr, /nothing was imported/);
    assert.equal((await signin('j2@example.com', 'import-pass-2')).status, 401, 'not even the good rows');

    const file = join(dir, `users-${store.kind}.jsonl`);
    writeFileSync(file, [...good, ...rest].join('\n'));
    const first = await cli(env, ['users', 'import', file]);
    assert.equal(first.code, 0, first.stderr);
    // j4 has no password: an account without one (issue 29).
    assert.match(first.stdout, /imported 3, skipped 1 \(already registered\), refused 0, of 4 rows/);
    assert.match(first.stderr, /processed 4\/4 rows/, 'plain progress lines when not on a terminal');
    assert.equal((await signin('j2@example.com', 'import-pass-2')).status, 200);
    assert.equal((await signin('j4@example.com', 'import-pass-2')).status, 401, 'no password: any one fails');

    const again = await cli(env, ['users', 'import', file]);
    assert.match(again.stdout, /imported 0, skipped 4 \(already registered\), refused 0, of 4 rows/);
  });

  test('CONTRACT: users import takes CSV with a header row, quoted fields included', async () => {
    const file = join(dir, `users-${store.kind}.csv`);
    writeFileSync(
      file,
      'email,name,password\r\nc1@example.com,"Smith, Jane",csv-pass-1\r\nc2@example.com,"She said ""hi""",csv-pass-2\r\n',
    );
    const run = await cli(env, ['users', 'import', file]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /imported 2, skipped 0 \(already registered\), refused 0, of 2 rows/);
    const list = (await cli(env, ['users', 'list', '--json'])).stdout;
    assert.ok(list.includes('"name":"Smith, Jane"'));
    assert.ok(list.includes('"name":"She said \\"hi\\""'));
  });

  // The line breaks go in passwords: names with control characters are refused by the API rules.
  test('ISSUE 12: a quoted CSV field may hold line breaks and doubled quotes (RFC 4180), and a BOM is ignored', async () => {
    const file = join(dir, `multiline-${store.kind}.csv`);
    const password = 'first line\r\nsecond "quoted" line';
    writeFileSync(
      file,
      '\uFEFFEmail,Name,Password\r\nml1@example.com,"O\'Neil ""Jr"", Esq.","first line\r\nsecond ""quoted"" line"\r\n',
    );
    const run = await cli(env, ['users', 'import', file]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /imported 1, skipped 0 \(already registered\), refused 0, of 1 rows/);
    assert.ok(
      (await listJson()).some((r) => r.email === 'ml1@example.com' && r.name === 'O\'Neil "Jr", Esq.'),
    );
    assert.equal((await signin('ml1@example.com', password)).status, 200);
    assert.equal((await signin('ml1@example.com', 'first line')).status, 401);
  });

  test('ISSUE 12: refused CSV rows keep their own line numbers after multi-line quoted fields, with LF or CRLF, and refuse the file', async () => {
    for (const eol of ['\n', '\r\n']) {
      const tag = eol === '\n' ? 'lf' : 'crlf';
      const file = join(dir, `lines-${tag}-${store.kind}.csv`);
      writeFileSync(
        file,
        [
          'email,name,password', // 1
          `${tag}1@example.com,One,"a password`, // 2
          '', // 3
          'over three lines"', // 4
          `not-an-email-${tag},Two,pass-word-222`, // 5
          `${tag}3@example.com,Three,pass-word-333,extra`, // 6
          '', // 7
          `${tag}4@example.com,"Four","pass`, // 8
          'word"', // 9: "pass\nword" is fine
          `${tag}5@example.com,Five,password`, // 10: too common
          `${tag}6@example.com,Six,"multi`, // 11
          'line 666"', // 12
        ].join(eol),
      );
      const run = await cli(env, ['users', 'import', file]);
      assert.equal(run.code, 1, run.stderr);
      assert.match(run.stdout, /imported 0, skipped 0 \(already registered\), refused 3, of 6 rows/, tag);
      const refused = [...run.stderr.matchAll(/^line (\d+): (.*)$/gm)].map((m) => [Number(m[1]), m[2]]);
      assert.deepEqual(
        refused,
        [
          [5, 'email: must be an email address like name@example.com'],
          [6, '4 fields where the header has 3'],
          [10, refused[2]?.[1]],
        ],
        tag,
      );
      assert.match(String(refused[2]?.[1]), /^password: .*common/);
      assert.equal(
        (await signin(`${tag}6@example.com`, `multi${eol}line 666`)).status,
        401,
        `${tag}: nothing imported`,
      );
    }
  });

  test('ISSUE 12: a CSV with broken quoting is refused whole, at the line of the broken record, before anything is imported', async () => {
    const file = join(dir, `broken-${store.kind}.csv`);
    writeFileSync(
      file,
      'email,name,password\r\nbq1@example.com,"Fine\r\nName",pass-word-111\r\nbq2@example.com,"Bad"quote,pass-word-222\r\n',
    );
    const run = await cli(env, ['users', 'import', file]);
    assert.equal(run.code, 1);
    assert.match(
      run.stderr,
      /^usher: line 4: not valid CSV \(CSV_INVALID_CLOSING_QUOTE\); nothing was imported$/m,
    );
    assert.equal((await signin('bq1@example.com', 'pass-word-111')).status, 401);
  });

  test('CONTRACT: users set-password changes the password and ends the user’s sessions', async () => {
    await addUser('setpw@example.com', 'Set Password', 'old-pass-word-1');
    const login = await fetch(`${server.url}/api/signin`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'setpw@example.com', password: 'old-pass-word-1' }),
    });
    const token = sessionToken(login.headers.getSetCookie());
    assert.ok(token);
    const run = await cli(
      env,
      ['users', 'set-password', '--email', 'SetPW@example.com'],
      'brand-new-pass-7\n',
    );
    assert.equal(run.code, 0, run.stderr);
    // The confirmation names the user by id; the password typed is not echoed anywhere.
    assert.match(run.stdout, /^password changed for user \d+; their sessions are ended\n$/);
    assert.ok(!`${run.stdout}${run.stderr}`.includes('brand-new-pass-7'), 'the new password is not printed');
    assert.equal((await signin('setpw@example.com', 'old-pass-word-1')).status, 401);
    assert.equal((await signin('setpw@example.com', 'brand-new-pass-7')).status, 200);
    const write = await fetch(`${server.url}/api/products`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'x', price: 1 }),
    });
    assert.equal(write.status, 401, 'the old session ended');
  });

  test('ISSUE 26: users add --no-password makes an account without a password; set-password gives it one', async () => {
    // Standard input is not read: what is piped is not made the password.
    const run = await cli(
      env,
      ['users', 'add', '--email', 'NoPass@example.com', '--name', 'No Password', '--no-password'],
      'piped-pass-word-1\n',
    );
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^created user \d+\tNoPass@example\.com\tNo Password\t/);
    const refused = await signin('nopass@example.com', 'piped-pass-word-1');
    const wrong = await signin('nobody-here@example.com', 'piped-pass-word-1');
    assert.equal(refused.status, 401, 'no password: any password is refused');
    assert.deepEqual(refused.json, wrong.json, 'with the answer of a wrong password');
    assert.equal(
      (await cli(env, ['users', 'set-password', '--email', 'nopass@example.com'], 'first-pass-word-2\n'))
        .code,
      0,
    );
    assert.equal((await signin('nopass@example.com', 'first-pass-word-2')).status, 200);
    // Only users add takes it.
    const misplaced = await cli(env, [
      'users',
      'set-password',
      '--email',
      'nopass@example.com',
      '--no-password',
    ]);
    assert.equal(misplaced.code, 2);
    assert.match(misplaced.stderr, /^usher: --no-password is an option of "users add" only/);
    assert.equal((await signin('nopass@example.com', 'first-pass-word-2')).status, 200, 'nothing changed');
  });

  test('CONTRACT: users delete removes the user; deleting an unknown email fails', async () => {
    await addUser('delete-me@example.com', 'Delete Me', 'delete-pass-1');
    assert.equal((await signin('delete-me@example.com', 'delete-pass-1')).status, 200);
    const run = await cli(env, ['users', 'delete', '--email', 'delete-me@example.com', '--yes']);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^deleted user \d+ \(delete-me@example\.com\)\n$/);
    assert.equal((await signin('delete-me@example.com', 'delete-pass-1')).status, 401);
    const again = await cli(env, ['users', 'delete', '--email', 'delete-me@example.com', '--yes']);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /USER_NOT_FOUND/);
  });

  test('ISSUE 32: without a terminal, users delete refuses (exit 2) unless --yes, and deletes nothing', async () => {
    await addUser('keep-me@example.com', 'Keep Me', 'keep-pass-word-1');
    // Standard input is a pipe here; even one holding the email does not count as a confirmation.
    for (const input of ['', 'keep-me@example.com\n', 'yes\n']) {
      const run = await cli(env, ['users', 'delete', '--email', 'keep-me@example.com'], input);
      assert.equal(run.code, 2, JSON.stringify(input));
      assert.equal(run.stdout, '');
      assert.match(
        run.stderr,
        /^usher: users delete asks for a confirmation on a terminal; without one, add --yes/,
      );
      assert.match(run.stderr, /^Usage: usher users delete --email E \[--yes\]$/m);
    }
    assert.equal((await signin('keep-me@example.com', 'keep-pass-word-1')).status, 200, 'not deleted');
    const misplaced = await cli(env, ['users', 'verify', '--email', 'keep-me@example.com', '--yes']);
    assert.equal(misplaced.code, 2);
    assert.match(misplaced.stderr, /^usher: --yes is an option of "users delete" only/);
    const yes = await cli(env, ['users', 'delete', '--email', 'keep-me@example.com', '--yes']);
    assert.equal(yes.code, 0, yes.stderr);
    assert.equal((await signin('keep-me@example.com', 'keep-pass-word-1')).status, 401, 'deleted with --yes');
  });

  test('CONTRACT: migrate applies pending migrations (none left: the server did it)', async () => {
    const run = await cli(env, ['migrate']);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout.trim(), 'migrations applied');
  });

  test('ISSUE 13: users verify marks the email verified (profile B shows emailVerified: true)', async () => {
    const email = `verify.${process.pid}.${Date.now()}@example.com`;
    const added = await addUser(email, 'Vera', 'a fine passphrase');
    const id = /created user (\d+)/.exec(added.stdout)?.[1];
    assert.ok(id, added.stdout);
    const emailVerified = async () =>
      ((await (await fetch(`${server.url}/api/users/${id}`)).json()) as { emailVerified: boolean })
        .emailVerified;
    assert.equal(await emailVerified(), false);
    const run = await cli(env, ['users', 'verify', '--email', email.toUpperCase()]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, new RegExp(`verified the email of user ${id}`));
    assert.equal(await emailVerified(), true);
    const unknown = await cli(env, ['users', 'verify', '--email', `nobody.${Date.now()}@example.com`]);
    assert.notEqual(unknown.code, 0);
  });

  test('ISSUE 13: mail send-test delivers to a real SMTP server, writes an .eml without one, and fails with exit 1 when refused', async () => {
    const smtp = await startSmtp();
    try {
      const sent = await cli({ ...env, SMTP_URL: smtp.url }, [
        'mail',
        'send-test',
        '--to',
        'ops@example.com',
      ]);
      assert.equal(sent.code, 0, sent.stderr);
      const mail = await smtp.waitFor((m) => m.to === 'ops@example.com');
      assert.match(mail.subject, /test/i);
    } finally {
      await smtp.close();
    }
    const outbox = mkdtempSync(join(tmpdir(), 'usher-cli-outbox-'));
    const written = await cli({ ...env, MAIL_OUTBOX: outbox }, [
      'mail',
      'send-test',
      '--to',
      'ops@example.com',
    ]);
    assert.equal(written.code, 0, written.stderr);
    const files = readdirSync(outbox).filter((f) => f.endsWith('.eml'));
    assert.equal(files.length, 1);
    assert.match(readFileSync(join(outbox, files[0]!), 'utf8'), /Subject: Test message from Usher/);
    const refused = await cli({ ...env, SMTP_URL: `smtp://127.0.0.1:${await freePort()}` }, [
      'mail',
      'send-test',
      '--to',
      'ops@example.com',
    ]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /refused/);
  });
});

const hasScript = spawnSync('script', ['--version']).status === 0;

describeUnless(hasScript ? false : 'script(1) is not installed', 'on a terminal', () => {
  let dir: string;
  let env: Record<string, string>;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'usher-tty-'));
    env = { DATABASE_URL: `sqlite:${join(dir, 'u.db')}` };
  });

  // script(1) gives the CLI a pseudo-terminal; what we write is what a person would type, and
  // only once the prompt is on screen (raw mode is on then, so nothing typed is echoed).
  const inTerminal = (command: string, answers: Array<[prompt: string, typed: string]>) =>
    new Promise<{ out: string; code: number | null }>((resolve) => {
      const child = spawn('script', ['-qec', command, '/dev/null'], {
        env: { PATH: process.env.PATH ?? '', ...env },
      });
      let out = '';
      let next = 0;
      let searchFrom = 0;
      child.stdout.on('data', (d) => {
        out += d;
        const answer = answers[next];
        const at = answer ? out.indexOf(answer[0], searchFrom) : -1;
        if (answer && at !== -1) {
          next += 1;
          searchFrom = at + answer[0].length;
          // A short pause lets the prompt's setRawMode take effect before the keys arrive.
          setTimeout(() => child.stdin.write(answer[1]), 100);
        }
      });
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      child.on('exit', (code) => {
        clearTimeout(timer);
        resolve({ out, code });
      });
    });
  const add = (email: string) => `${process.execPath} ${CLI} users add --email ${email} --name Tty`;
  /** Signs in on a server started for the occasion: the only black-box proof of a stored password. */
  const signsIn = async (email: string, password: string) => {
    const server = await startServer(env);
    try {
      return (await postJson(`${server.url}/api/signin`, { email, password })).status === 200;
    } finally {
      await server.stop();
    }
  };

  test('CONTRACT: the password is asked twice without echo', async () => {
    const { out, code } = await inTerminal(add('tty@example.com'), [
      ['Password: ', 'tty-password-42\r'],
      ['Repeat password: ', 'tty-password-42\r'],
    ]);
    assert.equal(code, 0, out);
    assert.match(out, /Password: /);
    assert.match(out, /Repeat password: /);
    assert.match(out, /created user/);
    assert.ok(!out.includes('tty-password-42'), 'the typed password is not echoed');
  });

  test('ISSUE 12: arrow keys typed at the prompt edit the line and never land in the password', async () => {
    // The prompt is a line editor (readline under `read`): Left moves the cursor, Up and Down
    // walk an empty history, and Enter submits the whole line wherever the cursor is. So the
    // password is exactly the printable keys typed; before, the escape bytes were part of it.
    const arrows = '\x1b[D\x1b[D\x1b[A\x1b[B\x1b[C';
    const { out, code } = await inTerminal(add('arrows@example.com'), [
      ['Password: ', `arrow-pass-77${arrows}\r`],
      ['Repeat password: ', `arrow-pass-77${arrows}\r`],
    ]);
    assert.equal(code, 0, out);
    assert.match(out, /created user/);
    assert.ok(await signsIn('arrows@example.com', 'arrow-pass-77'), 'the plain password signs in');
  });

  for (const [key, byte] of [
    ['Ctrl-C', '\x03'],
    ['Ctrl-D', '\x04'],
  ] as const) {
    test(`ISSUE 12: ${key} at the prompt, even after some typing, aborts with a message and a non-zero exit, submitting nothing`, async () => {
      const email = `cancel-${key.toLowerCase()}@example.com`;
      const { out, code } = await inTerminal(add(email), [
        ['Password: ', 'cancel-pass-55\r'],
        ['Repeat password: ', `cancel-pa${byte}`],
      ]);
      assert.notEqual(code, 0, out);
      assert.match(out, /usher: cancelled at the password prompt; nothing was changed/);
      assert.doesNotMatch(out, /created user/);
      const list = spawnSync(process.execPath, [CLI, 'users', 'list'], {
        env: { ...env, PATH: process.env.PATH },
      });
      assert.ok(!String(list.stdout).includes(email), String(list.stdout));
    });
  }

  const listed = () =>
    String(
      spawnSync(process.execPath, [CLI, 'users', 'list'], { env: { ...env, PATH: process.env.PATH } }).stdout,
    );
  const addPiped = (email: string) => {
    const run = spawnSync(process.execPath, [CLI, 'users', 'add', '--email', email, '--name', 'Doomed'], {
      env: { ...env, PATH: process.env.PATH },
      input: 'doomed-pass-word-1\n',
    });
    assert.equal(run.status, 0, String(run.stderr));
  };
  const remove = (email: string, ...more: string[]) =>
    `${process.execPath} ${CLI} users delete --email ${email} ${more.join(' ')}`;
  const CONFIRM = 'Type their email to confirm: ';

  test('ISSUE 32: on a terminal, users delete shows the user and deletes only when their email is typed again', async () => {
    const email = 'tty-delete@example.com';
    addPiped(email);
    const mistyped = await inTerminal(remove(email), [[CONFIRM, 'tty-delete@example.org\r']]);
    assert.equal(mistyped.code, 1, mistyped.out);
    assert.match(mistyped.out, /User \d+: tty-delete@example\.com \(Doomed\) will be deleted/);
    assert.match(mistyped.out, /usher: the email typed does not match; nothing was deleted/);
    assert.ok(listed().includes(email), 'still there');
    const empty = await inTerminal(remove(email), [[CONFIRM, '\r']]);
    assert.equal(empty.code, 1, empty.out);
    assert.ok(listed().includes(email), 'an empty answer deletes nothing');
    // The email compares as emails do: letter case and surrounding spaces aside.
    const confirmed = await inTerminal(remove(email), [[CONFIRM, ' TTY-Delete@Example.com\r']]);
    assert.equal(confirmed.code, 0, confirmed.out);
    assert.match(confirmed.out, /deleted user \d+ \(tty-delete@example\.com\)/);
    assert.ok(!listed().includes(email), 'deleted');
  });

  test('ISSUE 32: Ctrl-C at the delete confirmation deletes nothing', async () => {
    const email = 'tty-cancel-delete@example.com';
    addPiped(email);
    const { out, code } = await inTerminal(remove(email), [[CONFIRM, 'tty-cancel\x03']]);
    assert.notEqual(code, 0, out);
    assert.match(out, /usher: cancelled at the confirmation; nothing was changed/);
    assert.ok(listed().includes(email), 'still there');
  });

  test('ISSUE 32: on a terminal, users delete --yes asks nothing', async () => {
    const email = 'tty-yes-delete@example.com';
    addPiped(email);
    const { out, code } = await inTerminal(remove(email, '--yes'), []);
    assert.equal(code, 0, out);
    assert.doesNotMatch(out, /confirm/);
    assert.match(out, /deleted user \d+ \(tty-yes-delete@example\.com\)/);
    assert.ok(!listed().includes(email));
  });

  test('CONTRACT: import shows a progress bar', async () => {
    const file = join(dir, 'few.jsonl');
    writeFileSync(
      file,
      `${JSON.stringify({ email: 'p1@example.com', name: 'P', password: 'progress-pass-1' })}\n`,
    );
    const { out } = await inTerminal(`${process.execPath} ${CLI} users import ${file}`, []);
    assert.match(out, /\[#+\] 1\/1 100\.0% [\d.]+ rows\/s/);
  });
});
