// Issue 40, finding 5: "U+212A (KELVIN SIGN) and `k` are one email". The key was trim() and
// toLowerCase(), which folds U+212A to `k` but keeps fullwidth letters, ligatures and IDNA domains
// apart; the stored address kept the U+212A, so a reset asked for kane@ was mailed to \u212Aane@.
// Now one function (users/user.ts emailKey: NFKC, lower case, NFKC, IDNA domain) compares emails
// everywhere, and a new address is stored in its NFKC form (decisions 352-353): registration,
// sign-in, reset, admin invitation and CLI import all see one account.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { as, staff } from '../admin/support.ts';
import { newUser, register, startApp, type TestApp } from '../helpers/app.ts';
import { mailTo } from '../helpers/mail.ts';
import { runProcess } from '../helpers/process.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';

const CLI = fileURLToPath(new URL('../../bin/usher.mjs', import.meta.url));
const KELVIN = '\u212A';
const RESET = /reset your password/i;

const tag = () => randomBytes(4).toString('hex');

describeEachStore('one email, one key (issue 40, finding 5)', (store) => {
  let smtp: TestSmtp;
  let t: TestApp;
  before(async () => {
    smtp = await startSmtp();
    t = await startApp(store, 'b', { mail: mailTo(smtp.url) });
  });
  after(async () => {
    await t?.close();
    await smtp?.close();
  });

  test('ISSUE 40: \\u212Aane@ registered first: kane@ is 409 EMAIL_TAKEN, and the address stored (and shown) is Kane@', async () => {
    const local = `ane.${tag()}`;
    const squatter = await t.post('/api/users', newUser({ email: `${KELVIN}${local}@example.com` }));
    assert.equal(squatter.statusCode, 201, squatter.body);
    assert.equal(squatter.json().email, `K${local}@example.com`, 'stored in its NFKC form');
    const owner = await t.post('/api/users', newUser({ email: `k${local}@example.com` }));
    assert.equal(owner.statusCode, 409, owner.body);
    assert.equal(owner.json().error, 'EMAIL_TAKEN');
  });

  test('ISSUE 40: kane@ registered first: \\u212Aane@ and ｋａｎｅ@ (fullwidth) are 409 EMAIL_TAKEN', async () => {
    const local = `ane.${tag()}`;
    await register(t, newUser({ email: `k${local}@example.com` }));
    for (const lookalike of [`${KELVIN}${local}@example.com`, `\uFF4B${local}@example.com`]) {
      const res = await t.post('/api/users', newUser({ email: lookalike }));
      assert.equal(res.statusCode, 409, `${JSON.stringify(lookalike)}: ${res.body}`);
      assert.equal(res.json().error, 'EMAIL_TAKEN');
    }
  });

  test('ISSUE 40: ligatures and an IDNA domain are one key with their ASCII forms', async () => {
    const local = `fi.${tag()}`;
    await register(t, newUser({ email: `${local}@xn--exmple-cua.example` }));
    for (const same of [`\uFB01${local.slice(2)}@xn--exmple-cua.example`, `${local}@exämple.example`]) {
      const res = await t.post('/api/users', newUser({ email: same }));
      assert.equal(res.statusCode, 409, `${JSON.stringify(same)}: ${res.body}`);
    }
  });

  test('ISSUE 40: a reset asked for kane@ is mailed to Kane@ (the address compared), never to \\u212Aane@; a sign-in typed either way is that account', async () => {
    const local = `ane.${tag()}`;
    const body = newUser({ email: `${KELVIN}${local}@example.com` });
    const id = (await register(t, body)).id;
    const asked = await t.post('/api/password/forgot', { email: `k${local}@example.com` });
    assert.equal(asked.statusCode, 202, asked.body);
    const reset = await smtp.waitFor(
      (m) => RESET.test(m.subject) && m.envelopeTo.some((to) => to.includes(local)),
    );
    assert.deepEqual(reset.envelopeTo, [`K${local}@example.com`], 'mailed to the NFKC address');
    // And a sign-in typed either way is the one account.
    for (const email of [`k${local}@example.com`, `${KELVIN}${local}@example.com`]) {
      const res = await t.post('/api/signin', { email, password: body.password });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(BigInt(res.json().user.id), id);
    }
  });

  test('ISSUE 40: an admin invitation of a look-alike of an existing email is 409 EMAIL_TAKEN', async () => {
    const admin = await staff(t, store, 'admin');
    const local = `ane.${tag()}`;
    await register(t, newUser({ email: `k${local}@example.com` }));
    const res = await as(t, admin.token).post('/api/admin/users', {
      email: `${KELVIN}${local}@example.com`,
      name: 'Look Alike',
    });
    assert.equal(res.statusCode, 409, res.body);
    assert.equal(res.json().error, 'EMAIL_TAKEN');
  });

  test('ISSUE 40: users import skips a look-alike of an existing email and of an earlier line', async () => {
    const [a, b] = [`ane.${tag()}`, `ate.${tag()}`];
    await register(t, newUser({ email: `k${a}@example.com` }));
    const dir = mkdtempSync(join(tmpdir(), 'usher-email-identity-'));
    const file = join(dir, 'users.jsonl');
    const lines = [
      { email: `${KELVIN}${a}@example.com`, name: 'Squatter' },
      { email: `k${b}@example.com`, name: 'Kate' },
      { email: `\uFF4B${b}@example.com`, name: 'Fullwidth Kate' },
    ];
    writeFileSync(file, `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
    const run = await runProcess(process.execPath, [CLI, 'users', 'import', file], {
      DATABASE_URL: store.url,
    });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /imported 1, skipped 2/);
  });
});
