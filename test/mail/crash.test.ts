// Mail across a crash, with real server processes: a forgot-password ask that was answered 202 is
// in the database, so a process killed with SIGKILL right after answering (the SMTP server down,
// nothing delivered yet) still gets the reset mail out once it is restarted on the same database,
// and exactly once.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newUser } from '../helpers/app.ts';
import { mailsTo, metricIn, SUBJECTS, waitForMails, waitUntil } from '../helpers/mail.ts';
import { freePort, postJson, type ServerProcess, startServer } from '../helpers/process.ts';
import { linkToken, startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';

const PUBLIC_URL = 'https://accounts.usher.example';

/** How many messages a server's log says it tried and failed to deliver. */
function triedMails(output: string): number {
  const ids = new Set<string>();
  for (const line of output.split('\n')) {
    if (!line.includes('will retry')) continue;
    try {
      ids.add(String((JSON.parse(line) as { mailId?: unknown }).mailId));
    } catch {
      // not a log line
    }
  }
  return ids.size;
}

async function waiting(url: string): Promise<number> {
  const res = await fetch(`${url}/metrics`);
  assert.equal(res.status, 200);
  return metricIn(await res.text(), 'usher_mail_waiting');
}

describeEachStore('mail across a crash', (store) => {
  test('forgot-password asks answered 202, then kill -9: after a restart each reset mail arrives exactly once', async (t) => {
    const port = await freePort();
    const env = {
      DATABASE_URL: store.url,
      PUBLIC_URL,
      SMTP_URL: `smtp://127.0.0.1:${port}`,
      MAIL_POLL_MS: '100',
      // A process killed in the middle of a delivery attempt leaves its claim on the message; it
      // is taken over when the claim lapses (60 s by default), so the test keeps that short.
      MAIL_CLAIM_SECONDS: '2',
    };
    let server: ServerProcess | undefined = await startServer(env);
    let smtp: TestSmtp | undefined;
    t.after(async () => {
      await server?.stop('SIGKILL');
      await smtp?.close();
    });

    // `settled`: its ask was worked out and a delivery tried (and failed) before the kill;
    // `fresh`: asked at once just before the kill, so some may not have been looked at yet.
    const settled = newUser();
    const fresh = [newUser(), newUser(), newUser(), newUser()];
    const everyone = [settled, ...fresh];
    for (const user of everyone) {
      assert.equal((await postJson(`${server.url}/api/users`, user)).status, 201);
    }
    assert.deepEqual(await postJson(`${server.url}/api/password/forgot`, { email: settled.email }), {
      status: 202,
      json: { status: 'accepted' },
    });
    // Every message recorded so far (the verification mails and the settled ask's reset mail) has
    // had a delivery attempt once its id is in a "will retry" line (LOG_LEVEL warn prints them).
    await waitUntil(
      () => triedMails(server!.output()) >= everyone.length + 1,
      20_000,
      "a delivery attempt of the settled ask's reset mail",
    );
    const answers = await Promise.all(
      fresh.map((user) => postJson(`${server!.url}/api/password/forgot`, { email: user.email })),
    );
    assert.deepEqual(
      answers.map((a) => a.status),
      [202, 202, 202, 202],
    );
    assert.equal(await server.stop('SIGKILL'), 'SIGKILL');
    server = undefined;

    smtp = await startSmtp(port);
    server = await startServer(env);
    for (const user of everyone) {
      const [mail] = await waitForMails(smtp, user.email, SUBJECTS.reset, 1, 20_000);
      const token = linkToken(mail!, '/reset-password');
      const reset = await fetch(`${server.url}/api/password/reset`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token, password: 'after the crash' }),
      });
      assert.equal(reset.status, 204, `the link mailed after the restart works: ${await reset.text()}`);
    }
    // The verification mails recorded at registration were not lost either.
    for (const user of everyone) await waitForMails(smtp, user.email, SUBJECTS.verify);

    // Nothing waits in the outbox once every message is marked sent: a message is pending while it is
    // being sent (the killed process is gone), so no second copy can still be on its way.
    await waitUntil(async () => (await waiting(server!.url)) === 0, 20_000, 'an empty outbox');
    for (const user of everyone) {
      assert.equal(mailsTo(smtp, user.email, SUBJECTS.reset).length, 1, `one reset mail to ${user.email}`);
      assert.equal(mailsTo(smtp, user.email, SUBJECTS.verify).length, 1, `one verification mail`);
    }
  });
});
