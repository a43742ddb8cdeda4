// An operator's own texts and templates (MAIL_TEMPLATES_DIR; docs/languages.md), through the real
// configuration, server code and SMTP server: the worked example of docs/languages.md, its files
// taken from the guide as they stand, overriding Usher's texts and adding a language; and every
// way a template can be broken stopping the start with one line naming its file, in the real
// server process too.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfig, type Profile } from '../../src/config.ts';
import { checkMailTemplates, MAILS } from '../../src/features.ts';
import { NO_THROTTLE, newUser, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { mailTo, waitForMails } from '../helpers/mail.ts';
import { type ReceivedMail, startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const GUIDE = readFileSync(join(ROOT, 'docs', 'languages.md'), 'utf8');
const SERVER = join(ROOT, 'src', 'server.ts');
const PUBLIC_URL = 'https://id.example.com';

/** The guide's fenced blocks whose info string matches `info`, with the rest of the info string. */
function blocks(info: RegExp): { name: string; text: string }[] {
  const found: { name: string; text: string }[] = [];
  let current: { name: string; lines: string[] } | undefined;
  for (const line of GUIDE.split('\n')) {
    if (current === undefined) {
      const opening = /^```(.*)$/.exec(line);
      const named = opening && info.exec(opening[1]!.trim());
      if (named) current = { name: named[1]!, lines: [] };
      continue;
    }
    if (line === '```') {
      found.push({ name: current.name, text: `${current.lines.join('\n')}\n` });
      current = undefined;
    } else current.lines.push(line);
  }
  return found;
}

/** A folder with these files in it. */
function folder(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'usher-templates-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

const EXAMPLE = blocks(/^\w+ mail-template (\S+)$/);

describe("the guide's worked example", () => {
  test('has the six files, and its table of arguments is the one the checks use', () => {
    assert.deepEqual(EXAMPLE.map((f) => f.name).sort(), [
      'common.en.json',
      'common.it.json',
      'passwordChanged.en.html',
      'passwordChanged.en.txt',
      'passwordReset.de.json',
      'verifyEmail.it.json',
    ]);
    for (const { kind: id, args } of MAILS) {
      const row = new RegExp(`^\\| \`${id}\` \\|[^|]*\\|([^|]*)\\|$`, 'm').exec(GUIDE);
      assert.ok(row, `the guide's table has ${id}`);
      const listed = [...row[1]!.matchAll(/`(\w+)`/g)].map((m) => m[1]);
      assert.deepEqual(listed, [...args], `${id}'s arguments in the guide`);
    }
    const table = GUIDE.slice(GUIDE.indexOf('| Message | Sent when |')).split('\n\n')[0]!;
    const rows = [...table.matchAll(/^\| `(\w+)` \|/gm)].map((m) => m[1]).sort();
    assert.deepEqual(rows, MAILS.map((m) => m.kind).sort(), 'the table lists every mail, and only those');
  });
});

describeEachStore('MAIL_TEMPLATES_DIR: the worked example', (store) => {
  let smtp: TestSmtp;
  let dir: string;
  const apps = {} as Record<Profile, TestApp>;
  before(async () => {
    smtp = await startSmtp();
    dir = folder(Object.fromEntries(EXAMPLE.map((f) => [f.name, f.text])));
    const templates = loadConfig({ MAIL_TEMPLATES_DIR: dir }).mail.templates;
    for (const profile of ['a', 'b'] as const)
      apps[profile] = await startApp(store, profile, {
        publicUrl: PUBLIC_URL,
        mail: { ...mailTo(smtp.url), templates },
        throttle: { ...NO_THROTTLE },
      });
  });
  after(async () => {
    for (const t of Object.values(apps)) await t?.close();
    await smtp?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const register = async (t: TestApp, acceptLanguage: string) => {
    const user = newUser();
    const res = await t.inject({
      method: 'POST',
      url: '/api/users',
      headers: { 'content-type': 'application/json', 'accept-language': acceptLanguage },
      payload: JSON.stringify(user),
    });
    assert.equal(res.statusCode, 201, res.body);
    return { ...user, id: res.json().id as number };
  };
  const mail = async (email: string, subject: string): Promise<ReceivedMail> =>
    (await waitForMails(smtp, email, new RegExp(`^${subject}$`)))[0]!;

  test("[a] German: the reset mail has the operator's subject and paragraphs, between Usher's German greeting and closing", async () => {
    const user = await register(apps.a, 'de-DE');
    assert.equal((await apps.a.post('/api/password/forgot', { email: user.email })).statusCode, 202);
    const reset = await mail(user.email, 'Acme: Ihr neues Passwort');
    assert.ok(
      reset.text.startsWith('Guten Tag,\n\nfür Ihr Acme-Konto wurde ein neues Passwort angefordert.\n'),
      reset.text,
    );
    assert.match(reset.text, /Er ist 30 Minuten lang gültig, bis \d{1,2}:\d{2} UTC\./);
    assert.match(reset.text, /\nNeues Passwort wählen:\nhttps:\/\/id\.example\.com\/reset-password#token=/);
    assert.ok(reset.text.endsWith('\n— Usher\n'), 'Usher’s German closing');
    // Other German mails are Usher's own.
    await mail(user.email, 'Bestätigen Sie Ihre E-Mail-Adresse');
  });

  test("[b] English: every mail ends with the operator's closing; the password notice is the operator's whole template, in both parts", async () => {
    const user = await register(apps.b, 'en-US');
    const verify = await mail(user.email, 'Confirm your email address');
    assert.ok(verify.text.endsWith('\n— The Acme team\n'), verify.text);
    const token = await signIn(apps.b, user);
    const changed = await apps.b.inject({
      method: 'PUT',
      url: `/api/users/${user.id}`,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      payload: JSON.stringify({
        email: user.email,
        name: user.name,
        password: `${user.password}!`,
        currentPassword: user.password,
      }),
    });
    assert.equal(changed.statusCode, 200, changed.body);
    const notice = await mail(user.email, 'Your password was changed');
    assert.match(
      notice.text,
      /^Hi,\n\nYour Acme password was changed on [A-Z][a-z]+ \d{1,2}, \d{4} at \d{1,2}:\d{2} [AP]M UTC\.\n\nNot you\? Write to security@acme\.example at once\.\n$/,
    );
    assert.match(notice.html, /<p>Your Acme password was changed on <b>[A-Z][a-z]+ \d{1,2}, \d{4}<\/b> at /);
    assert.match(notice.html, /<a href="mailto:security@acme\.example">/);
  });

  test('[a] Italian, a language Usher does not ship: kept at registration; the verification mail is the one the guide shows; the rest falls back to English', async () => {
    const user = await register(apps.a, 'it-IT, en;q=0.5');
    const verify = await mail(user.email, 'Conferma il tuo indirizzo email');
    const [shown] = blocks(/^text mail-result (verifyEmail\.it)$/);
    assert.ok(shown, 'the guide shows the Italian mail');
    assert.equal(verify.text.replace(/#token=[A-Za-z0-9_-]+/, '#token=…'), shown.text);
    assert.match(verify.html, /<html lang="it" dir="ltr">/);
    const token = await signIn(apps.a, user);
    const account = await apps.a.inject({
      method: 'GET',
      url: '/api/account',
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(account.json().locale, 'it-IT');
    assert.equal((await apps.a.post('/api/password/forgot', { email: user.email })).statusCode, 202);
    const reset = await mail(user.email, 'Reset your password');
    assert.ok(reset.text.endsWith('\n— The Acme team\n'), 'English, with the operator’s English closing');
  });
});

/**
 * What the server and the CLI do at start: loadConfig, which checks all it can without knowing the
 * mails, then the check against the mails the features declare (decision 381).
 */
function startConfig(env: Record<string, string>) {
  const config = loadConfig(env);
  checkMailTemplates(config);
  return config;
}

describe('MAIL_TEMPLATES_DIR: a broken template stops the start, naming its file', () => {
  /** `early`: found by loadConfig alone, as it needs no mail's declaration. */
  const cases: readonly {
    what: string;
    files: Record<string, string>;
    file: string;
    says: RegExp;
    early?: true;
  }[] = [
    {
      what: 'a text that does not parse',
      files: { 'passwordReset.de.json': '{"body": "Hallo {name"}' },
      file: 'passwordReset.de.json',
      says: /body: does not parse as ICU MessageFormat: .* at line 1, column \d+/,
      early: true,
    },
    {
      what: 'a message Usher does not send',
      files: { 'passwordForgotten.en.json': '{"subject": "x"}' },
      file: 'passwordForgotten.en.json',
      says: /names no message Usher sends: "passwordForgotten"/,
    },
    {
      what: 'an argument the message does not have',
      files: { 'passwordReset.de.json': '{"body": "Link: {link}"}' },
      file: 'passwordReset.de.json',
      says: /body: uses \{link\}, an argument the passwordReset message does not have/,
    },
    {
      what: "an argument of another message (the code of a sign-in code, in a reset's whole template)",
      files: { 'passwordReset.en.txt': 'Your code: {code}' },
      file: 'passwordReset.en.txt',
      says: /text: uses \{code\}/,
    },
    {
      what: 'a plural of something that is not a number',
      files: { 'passkeyAdded.fr.json': '{"body": "{passkeyName, plural, one {#} other {#}}"}' },
      file: 'passkeyAdded.fr.json',
      says: /\{passkeyName\} is not a number/,
    },
    {
      what: 'a select on a value the argument never takes',
      files: { 'common.es.json': '{"greeting": "{hasName, select, si {Hola {name}} other {Hola}}"}' },
      file: 'common.es.json',
      says: /\{hasName\} is never "si"/,
      early: true,
    },
    {
      what: 'a text the message does not have',
      files: { 'passwordChanged.en.json': '{"action": "Go"}' },
      file: 'passwordChanged.en.json',
      says: /"action" is not a text of this message/,
    },
    {
      what: 'a file that is not JSON',
      files: { 'verifyEmail.de.json': '{subject: nope}' },
      file: 'verifyEmail.de.json',
      says: /is not JSON/,
      early: true,
    },
    {
      what: 'an HTML template without its text part',
      files: { 'passwordChanged.de.html': '<p>{name}</p>' },
      file: 'passwordChanged.de.html',
      says: /needs passwordChanged\.de\.txt beside it/,
      early: true,
    },
    {
      what: 'a language Usher does not ship, with a message not whole',
      files: { 'verifyEmail.nl.json': '{"subject": "Bevestig je e-mailadres"}' },
      file: 'verifyEmail.nl.json',
      says: /Usher has no nl texts to complete this message: it needs body, action, greeting \(in common\), linkLine \(in common\), closing \(in common\)/,
    },
    {
      what: 'a locale that is not a BCP 47 tag',
      files: { 'passwordReset.de_DE.json': '{"subject": "x"}' },
      file: 'passwordReset.de_DE.json',
      says: /is not named <message>\.<locale>|is not a BCP 47 language tag/,
      early: true,
    },
    {
      what: 'a file of another kind',
      files: { 'README.md': '# our templates' },
      file: 'README.md',
      says: /is not named <message>\.<locale>\.json, \.txt or \.html/,
      early: true,
    },
    {
      what: 'the same template twice, in two letter cases',
      files: {
        'passwordReset.de-AT.json': '{"subject": "a"}',
        'passwordReset.DE-at.json': '{"subject": "b"}',
      },
      file: 'passwordReset.de-AT.json',
      says: /is the same template as .*passwordReset\.DE-at\.json/,
      early: true,
    },
  ];

  for (const { what, files, file, says, early } of cases) {
    test(`the start refuses ${what}${early ? ' (loadConfig does)' : ''}`, () => {
      const dir = folder(files);
      try {
        assert.throws(
          () => (early ? loadConfig : startConfig)({ MAIL_TEMPLATES_DIR: dir }),
          (error: unknown) => {
            assert.ok(error instanceof ConfigError, String(error));
            assert.equal(error.setting, 'MAIL_TEMPLATES_DIR');
            assert.ok(error.message.startsWith(`MAIL_TEMPLATES_DIR: ${join(dir, file)}: `), error.message);
            assert.match(error.message, says);
            assert.doesNotMatch(error.message, /\n/, 'one line');
            return true;
          },
        );
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }

  test('a folder that is not there, or not a folder, stops the start too', () => {
    assert.throws(
      () => loadConfig({ MAIL_TEMPLATES_DIR: '/no/such/folder' }),
      /MAIL_TEMPLATES_DIR: \/no\/such\/folder: is not a folder/,
    );
    const dir = folder({ 'a.txt': '' });
    try {
      assert.throws(
        () => loadConfig({ MAIL_TEMPLATES_DIR: join(dir, 'a.txt') }),
        /is not a folder Usher can read/,
      );
      mkdirSync(join(dir, 'sub'));
      rmSync(join(dir, 'a.txt'));
      assert.throws(() => loadConfig({ MAIL_TEMPLATES_DIR: dir }), /sub: is not a file/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('hidden files are passed over, and an empty folder is no change', () => {
    const dir = folder({ '.gitkeep': '' });
    try {
      assert.deepEqual(loadConfig({ MAIL_TEMPLATES_DIR: dir }).mail.templates.locales, {});
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  for (const [what, text, says] of [
    ['a text that does not parse', '{"body": "Hallo {name"}', 'body: does not parse'],
    ['an argument the mail does not have', '{"body": "Link: {link}"}', 'body: uses {link}'],
  ] as const)
    test(`the server process stops before it listens, for ${what}: exit 2, one stderr line naming the file, no stack trace, no database made`, async () => {
      const dir = folder({ 'passwordReset.de.json': text });
      const cwd = mkdtempSync(join(tmpdir(), 'usher-templates-run-'));
      try {
        const child = spawn(process.execPath, [SERVER], {
          cwd,
          env: { PATH: process.env.PATH ?? '', MAIL_TEMPLATES_DIR: dir, PORT: '0' },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (c: Buffer) => {
          stdout += c;
        });
        child.stderr.on('data', (c: Buffer) => {
          stderr += c;
        });
        const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
        const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
        clearTimeout(timer);
        assert.equal(code, 2, `exit ${code}; stderr: ${stderr}`);
        assert.equal(stdout, '');
        const lines = stderr.split('\n').filter((line) => line !== '');
        assert.equal(lines.length, 1, `one stderr line: ${JSON.stringify(stderr)}`);
        assert.equal(
          lines[0]!.startsWith(
            `usher: configuration error: MAIL_TEMPLATES_DIR: ${join(dir, 'passwordReset.de.json')}: ${says}`,
          ),
          true,
          lines[0],
        );
        assert.ok(!lines[0]!.includes('    at '), 'no stack trace');
        assert.throws(() => readFileSync(join(cwd, 'data', 'usher.db')), 'no database was made');
      } finally {
        rmSync(dir, { recursive: true, force: true });
        rmSync(cwd, { recursive: true, force: true });
      }
    });
});
