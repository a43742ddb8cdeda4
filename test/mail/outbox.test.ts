// The mail outbox (CONTRACT "Mail, password reset and email verification"): mail is recorded with the
// change that caused it and delivered in the background, so an SMTP server that is down delays it
// (retried with backoff) but never loses it nor delays the answer; a message that keeps failing is
// given up on; several instances never send one message twice; without SMTP_URL each message is
// written as a .eml file. Every test has a database of its own: the outbox gauge counts them all.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { simpleParser } from 'mailparser';
import type { Profile } from '../../src/config.ts';
import { register, startApp, type TestApp } from '../helpers/app.ts';
import { mailsTo, mailTo, metric, SUBJECTS, waitForMails, waitUntil } from '../helpers/mail.ts';
import { freePort } from '../helpers/process.ts';
import { linkToken, startSmtp } from '../helpers/smtp.ts';
import { describeEachStore, freshDatabaseUrl, type Store } from '../helpers/stores.ts';

const PUBLIC_URL = 'https://accounts.usher.example';
const DELIVERIES = 'usher_mail_deliveries_total';
const WAITING = 'usher_mail_waiting';

describeEachStore('mail outbox', (store) => {
  /** An app on a database of its own, closed (and the database dropped) when the test ends. */
  async function isolatedApps(
    t: TestContext,
    count: number,
    overrides: Parameters<typeof startApp>[2],
    profile: Profile = 'b',
    options: Parameters<typeof startApp>[3] = {},
  ): Promise<TestApp[]> {
    const fresh = await freshDatabaseUrl(store.kind);
    const own: Store = { kind: store.kind, url: fresh.url };
    const apps: TestApp[] = [];
    t.after(async () => {
      for (const app of apps) await app.close();
      await fresh.drop();
    });
    for (let i = 0; i < count; i++) {
      apps.push(await startApp(own, profile, { publicUrl: PUBLIC_URL, ...overrides }, options));
    }
    return apps;
  }

  test('SMTP down when the mail is recorded, up a second later: the mail arrives, retried', async (t) => {
    const port = await freePort();
    // The app's clock runs, and the test moves it on past the retry delay instead of waiting it out.
    let ahead = 0;
    const clock = () => Date.now() + ahead;
    const [app] = await isolatedApps(t, 1, { mail: mailTo(`smtp://127.0.0.1:${port}`) }, 'b', { clock });
    // Answered while nothing listens on the SMTP port: the answer does not wait for delivery.
    const user = await register(app!);

    await waitUntil(
      async () => (await metric(app!, DELIVERIES, 'outcome="retry"')) >= 1,
      10_000,
      'a delivery tried while nothing listens',
    );
    assert.ok((await metric(app!, DELIVERIES, 'outcome="retry"')) >= 1, 'tried and failed while down');
    assert.equal(await metric(app!, WAITING), 1, 'the message waits in the outbox');
    assert.equal(await metric(app!, DELIVERIES, 'outcome="sent"'), 0);

    const smtp = await startSmtp(port);
    t.after(() => smtp.close());
    // A second later (the first retry is due 0.8-1.2 s after the first failure).
    ahead += 1500;
    const [mail] = await waitForMails(smtp, user.email, SUBJECTS.verify, 1, 10_000);
    assert.ok((await metric(app!, DELIVERIES, 'outcome="retry"')) > 0);
    // The SMTP server has the message a moment before the sender records it as sent.
    await waitUntil(
      async () =>
        (await metric(app!, DELIVERIES, 'outcome="sent"')) >= 1 && (await metric(app!, WAITING)) === 0,
      10_000,
      'the message to be recorded as sent',
    );

    const token = linkToken(mail!, '/verify-email');
    assert.equal((await app!.post('/api/email/verify', { token })).statusCode, 204, 'the retried link works');
    const logs = app!.logs.join('');
    assert.match(logs, /will retry/, 'the failed attempts are logged');
    assert.ok(!logs.includes(token), 'no log line holds the token');
  });

  test('a message still failing after mail.maxAgeMs is marked failed and no longer waits', async (t) => {
    const port = await freePort();
    let ahead = 0;
    const clock = () => Date.now() + ahead;
    const [app] = await isolatedApps(
      t,
      1,
      { mail: mailTo(`smtp://127.0.0.1:${port}`, { maxAgeMs: 1500 }) },
      'b',
      { clock },
    );
    const user = await register(app!);
    assert.equal(await metric(app!, WAITING), 1);
    // Once it failed a first time, the app's clock is moved past mail.maxAgeMs (and the retry delay).
    await waitUntil(
      async () => (await metric(app!, DELIVERIES, 'outcome="retry"')) >= 1,
      10_000,
      'a first delivery attempt',
    );
    ahead += 2000;

    await waitUntil(
      async () => (await metric(app!, DELIVERIES, 'outcome="failed"')) >= 1,
      10_000,
      'the message to be marked failed',
    );
    assert.ok((await metric(app!, DELIVERIES, 'outcome="retry"')) >= 1, 'retried before giving up');
    assert.equal(await metric(app!, WAITING), 0, 'a failed message is not waiting');
    const line = app!.logs.map((l) => JSON.parse(l)).find((l) => l.msg === 'mail failed for good');
    assert.ok(line, 'giving up is logged');
    assert.equal(line.level, 50, 'as an error');

    // Given up for good: an SMTP server that comes up later receives nothing. A later mail is
    // delivered by a round that claims the oldest due message first, so once it is sent and
    // nothing waits, a round has run with the server up and passed the failed one by.
    const smtp = await startSmtp(port);
    t.after(() => smtp.close());
    const later = await register(app!);
    await waitForMails(smtp, later.email, SUBJECTS.verify);
    await waitUntil(
      async () =>
        (await metric(app!, DELIVERIES, 'outcome="sent"')) >= 1 && (await metric(app!, WAITING)) === 0,
      10_000,
      'the later mail to be recorded as sent',
    );
    assert.deepEqual(mailsTo(smtp, user.email), []);
    assert.equal(await metric(app!, DELIVERIES, 'outcome="sent"'), 1, 'the later mail alone was sent');
    assert.equal(smtp.messages.length, 1, `only the later mail arrived: ${smtp.messages.map((m) => m.to)}`);
  });

  test('two instances on one database with one SMTP server: each message is sent exactly once', async (t) => {
    const smtp = await startSmtp();
    t.after(() => smtp.close());
    const apps = await isolatedApps(t, 2, { mail: mailTo(smtp.url, { pollMs: 50 }) });
    const users = await Promise.all(Array.from({ length: 10 }, (_, i) => register(apps[i % 2]!)));
    for (const user of users) await waitForMails(smtp, user.email, SUBJECTS.verify);
    let sent = 0;
    await waitUntil(
      async () => {
        sent = 0;
        for (const app of apps) sent += await metric(app, DELIVERIES, 'outcome="sent"');
        return sent >= 10;
      },
      10_000,
      'the 10 messages to be recorded as sent',
    );
    // Closing an app waits for its delivery round in progress: a second copy of a message, were
    // one being sent, has arrived by then.
    for (const app of apps) await app.close();

    for (const user of users) {
      assert.equal(mailsTo(smtp, user.email).length, 1, `exactly one mail to ${user.email}`);
    }
    assert.equal(smtp.messages.length, 10);
    assert.equal(sent, 10, 'the instances together sent 10 messages');
  });

  test('without SMTP_URL each message is written as one .eml file in the outbox folder', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'usher-eml-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const [app] = await isolatedApps(t, 1, { mail: mailTo(undefined, { outboxDir: join(dir, 'outbox') }) });
    const users = [await register(app!), await register(app!)];

    const files = () => {
      try {
        return readdirSync(join(dir, 'outbox')).sort();
      } catch {
        return [];
      }
    };
    await waitUntil(() => files().length >= 2, 10_000, 'two .eml files');
    // A file is written before its message is marked sent: once both are sent and none waits,
    // this app's only sender has nothing left to write.
    await waitUntil(
      async () =>
        (await metric(app!, DELIVERIES, 'outcome="sent"')) >= 2 && (await metric(app!, WAITING)) === 0,
      10_000,
      'both messages to be recorded as sent',
    );
    assert.equal(files().length, 2, `one file per message: ${files()}`);
    assert.ok(
      files().every((f) => f.endsWith('.eml') && !f.startsWith('.')),
      `only whole .eml files: ${files()}`,
    );

    const written: { file: string; to: string; token: string }[] = [];
    for (const file of files()) {
      const raw = readFileSync(join(dir, 'outbox', file), 'utf8');
      assert.match(raw, /^Subject: Confirm your email address$/m);
      const parsed = await simpleParser(raw);
      const to = (Array.isArray(parsed.to) ? parsed.to[0] : parsed.to)?.value[0]?.address ?? '';
      const link = new RegExp(`${PUBLIC_URL}/verify-email#token=([A-Za-z0-9_-]{43})`).exec(parsed.text ?? '');
      assert.ok(link, `the link in ${file}: ${parsed.text}`);
      assert.ok(String(parsed.html).includes(link[0]), 'the HTML part has the same link');
      written.push({ file, to, token: link[1]! });
    }
    assert.deepEqual(written.map((w) => w.to).sort(), users.map((u) => u.email).sort());
    assert.equal(await metric(app!, DELIVERIES, 'outcome="sent"'), 2);

    // The log says which file was written for which recipient, and never holds the token.
    const log = app!.logs.join('');
    for (const { file, to, token } of written) {
      assert.ok(
        app!.logs.some((line) => line.includes(file) && line.includes(to)),
        `a log line names ${file} and ${to}: ${log}`,
      );
      assert.ok(!log.includes(token), 'no token in the log');
    }
    for (const { token } of written) {
      assert.equal(
        (await app!.post('/api/email/verify', { token })).statusCode,
        204,
        'the written link works',
      );
    }
  });
});
