// Issue 25: "emails with zero-width, soft-hyphen or bidi-override characters make look-alike
// accounts, and `x<evil@evil.example>` is stored as one address but delivered to another". An
// email is now refused (400 VALIDATION_FAILED, `email: …`) wherever it is accepted for storage
// (registration, PUT /api/users/{id}, the admin CLI) when it holds control or format characters,
// or anything a mailer reads as address syntax (a display name, quotes, a comment, a list, a
// domain literal), or dots a mailer would quote. Sign-in with such input fails like an unknown
// email. What is stored is what a real SMTP server is asked to deliver to.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { LightMyRequestResponse } from 'fastify';
import type { Profile } from '../../src/config.ts';
import { asUser, newUser, register, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { mailTo, SUBJECTS, waitForMails } from '../helpers/mail.ts';
import { runProcess } from '../helpers/process.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';

const CLI = fileURLToPath(new URL('../../bin/usher.mjs', import.meta.url));

/** A local part no other test uses, for each refused form to wrap. */
let n = 0;
const local = () => `rule${++n}.${process.pid}`;

/** [what, email] pairs that must be refused; each would be a look-alike or be delivered elsewhere. */
const REFUSED: Array<[string, () => string]> = [
  ['a zero-width space (U+200B)', () => `${local()}\u200b@example.com`],
  ['a zero-width joiner (U+200D)', () => `ad\u200da.${local()}@example.com`],
  ['a soft hyphen (U+00AD)', () => `${local()}\u00ad@example.com`],
  ['a right-to-left override (U+202E)', () => `${local()}@\u202eelpmaxe.com`],
  ['a left-to-right isolate (U+2066)', () => `\u2066${local()}@example.com`],
  ['a byte-order mark inside (U+FEFF)', () => `${local()}\ufeffx@example.com`],
  ['a C1 control (U+0085)', () => `${local()}\u0085@example.com`],
  ['a display name glued on', () => `x<${local()}@evil.example>`],
  ['a display name with a space', () => `Ada <${local()}@example.com>`],
  ['a quoted local part', () => `"${local()}"@example.com`],
  ['a comment', () => `${local()}(comment)@example.com`],
  ['a list (comma)', () => `a,${local()}@example.com`],
  ['a list (semicolon)', () => `a;${local()}@example.com`],
  ['a group (colon)', () => `group:${local()}@example.com`],
  ['a backslash', () => `a\\${local()}@example.com`],
  ['a domain literal', () => `${local()}@[192.0.2.1]`],
  ['two dots in a row', () => `a..${local()}@example.com`],
  ['a leading dot', () => `.${local()}@example.com`],
  ['a trailing dot before @', () => `${local()}.@example.com`],
];

function assertEmailRefused(res: LightMyRequestResponse, what: string) {
  assert.equal(res.statusCode, 400, `${what}: ${res.body}`);
  assert.deepEqual(Object.keys(res.json()).sort(), ['error', 'message'], what);
  assert.equal(res.json().error, 'VALIDATION_FAILED', what);
  assert.match(res.json().message, /^email: /, what);
}

describeEachStore('email rules', (store) => {
  let smtp: TestSmtp;
  const apps = {} as Record<Profile, TestApp>;
  before(async () => {
    smtp = await startSmtp();
    for (const profile of ['a', 'b'] as const)
      apps[profile] = await startApp(store, profile, { mail: mailTo(smtp.url) });
  });
  after(async () => {
    for (const t of Object.values(apps)) await t.close();
    await smtp.close();
  });

  for (const profile of ['a', 'b'] as const) {
    test(`[${profile}] ISSUE 25: registration refuses control and format characters, display names and address syntax: 400 VALIDATION_FAILED "email: …"`, async () => {
      const t = apps[profile];
      for (const [what, email] of REFUSED)
        assertEmailRefused(await t.post('/api/users', newUser({ email: email() })), what);
    });

    test(`[${profile}] ISSUE 25: sign-in with such an email fails exactly like an unknown email`, async () => {
      const t = apps[profile];
      const unknown = await t.post('/api/signin', {
        email: `${local()}@example.com`,
        password: 'some password 1',
      });
      assert.equal(unknown.statusCode, 401);
      for (const [what, email] of REFUSED) {
        const res = await t.post('/api/signin', { email: email(), password: 'some password 1' });
        assert.equal(res.statusCode, 401, `${what}: ${res.body}`);
        assert.equal(res.body, unknown.body, what);
      }
    });
  }

  test('ISSUE 25: a look-alike of a registered email cannot be registered beside it', async () => {
    const t = apps.b;
    const ada = await register(t);
    const [name, domain] = ada.email.split('@') as [string, string];
    for (const lookalike of [
      `${name}\u200b@${domain}`,
      `${name.slice(0, 2)}\u00ad${name.slice(2)}@${domain}`,
      `\u202d${ada.email}`,
      `${name}@${domain}\u200c`,
    ]) {
      assertEmailRefused(
        await t.post('/api/users', newUser({ email: lookalike })),
        JSON.stringify(lookalike),
      );
    }
  });

  test('ISSUE 25: PUT /api/users/{id} refuses the same emails, and the account keeps its address', async () => {
    const t = apps.b;
    const u = await register(t);
    const me = asUser(t, await signIn(t, u));
    for (const [what, email] of REFUSED) {
      const res = await me.put(`/api/users/${u.id}`, {
        email: email(),
        name: u.name,
        currentPassword: u.password,
      });
      assertEmailRefused(res, what);
    }
    assert.equal((await t.get(`/api/users/${u.id}`)).json().email, u.email);
  });

  test('ISSUE 25: x<evil@evil.example> is refused, so nothing is mailed to evil.example; an address with atext specials is delivered to exactly as stored', async () => {
    const t = apps.b;
    const refused = await t.post('/api/users', newUser({ email: `x<${local()}@evil.example>` }));
    assertEmailRefused(refused, 'the display-name form');

    // RFC 5322 atext beyond letters and digits is kept, and reaches the server unchanged (the
    // domain in lower case: nodemailer writes domains so, and their case means nothing).
    const email = `O'Brien+tag{1}|x~y=z.${local()}@example.com`;
    const res = await t.post('/api/users', newUser({ email }));
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(res.json().email, email, 'stored as sent');
    const [mail] = await waitForMails(smtp, email, SUBJECTS.verify);
    assert.deepEqual(mail!.envelopeTo, [email], 'the envelope recipient is the stored address');
    assert.ok(
      smtp.messages.every((m) => m.envelopeTo.every((to) => !to.endsWith('@evil.example'))),
      'no mail went to evil.example',
    );
  });

  test('ISSUE 25: the admin CLI refuses them too: users add and users import', async () => {
    const env = { DATABASE_URL: store.url };
    const add = await runProcess(
      process.execPath,
      [CLI, 'users', 'add', '--email', `x<${local()}@evil.example>`, '--name', 'X'],
      env,
      'a good pass phrase\n',
    );
    assert.notEqual(add.code, 0, add.stdout);
    assert.match(add.stderr, /email: /);

    const dir = mkdtempSync(join(tmpdir(), 'usher-email-rules-'));
    const file = join(dir, 'users.jsonl');
    const good = newUser();
    writeFileSync(
      file,
      `${[
        newUser({ email: `${local()}\u200b@example.com` }),
        newUser({ email: `"${local()}"@example.com` }),
        good,
      ]
        .map((row) => JSON.stringify(row))
        .join('\n')}\n`,
    );
    const run = await runProcess(process.execPath, [CLI, 'users', 'import', file], env);
    assert.equal(run.code, 1, `${run.stdout}\n${run.stderr}`);
    assert.match(run.stderr, /line 1\b.*email: /);
    assert.match(run.stderr, /line 2\b.*email: /);
    // One bad line refuses the file (issue 31): the good line is not imported either.
    assert.match(run.stdout + run.stderr, /imported 0\b/);
  });
});
