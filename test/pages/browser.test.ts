// The pages a mail link opens, in a real headless Chromium against a real listening Usher, with
// mail going to a real SMTP server (smtp-server on a local port). Skipped, visibly, without Chromium.
// Screenshots of the reset page on a phone-sized viewport go to docs/screenshots/.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page, Route } from 'playwright-core';
import { SMTPServer } from 'smtp-server';
import { newUser, startApp, type TestApp, testConfig } from '../helpers/app.ts';
import { launchChromium, skipWithoutChromium } from '../helpers/browser.ts';
import { freePort, postJson } from '../helpers/process.ts';
import { describeUnless } from '../helpers/skip.ts';
import { describeEachStore } from '../helpers/stores.ts';

const skip = skipWithoutChromium;
// The committed screenshots in docs/screenshots/ are rewritten only when asked
// (UPDATE_SCREENSHOTS=1 npm test), so a test run leaves the working tree as it was.
const SCREENSHOTS = new URL(
  process.env.UPDATE_SCREENSHOTS === '1' ? '../../docs/screenshots/' : '../../test-results/',
  import.meta.url,
);
const RESULTS = new URL('../../test-results/pages/', import.meta.url);
const PHONE = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };
const EXPIRED = 'This link has expired or was already used.';

// ---- a real SMTP server, and just enough MIME to read what it received -------------------------

interface Received {
  to: string[];
  raw: string;
}

async function startSmtp(): Promise<{ url: string; messages: Received[]; close(): Promise<void> }> {
  const messages: Received[] = [];
  const server = new SMTPServer({
    authOptional: true,
    // Plain SMTP, as a relay on the same host: offering STARTTLS with a self-signed certificate
    // would only make the client refuse it.
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        messages.push({
          to: session.envelope.rcptTo.map((r) => r.address.toLowerCase()),
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as { port: number };
  return {
    url: `smtp://127.0.0.1:${port}`,
    messages,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The leaf parts of a MIME message, decoded (base64 or quoted-printable: `=\r\n` and `=3D`). */
function mimeParts(raw: string): { type: string; text: string }[] {
  const split = /\r?\n\r?\n/.exec(raw);
  const head = (split ? raw.slice(0, split.index) : raw).replace(/\r?\n[ \t]+/g, ' ');
  const body = split ? raw.slice(split.index + split[0].length) : '';
  const type = /^content-type:\s*([^\r\n]*)/im.exec(head)?.[1] ?? 'text/plain';
  const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1];
  if (/^multipart\//i.test(type) && boundary) {
    return body
      .split(`--${boundary}`)
      .slice(1)
      .filter((part) => !part.startsWith('--'))
      .flatMap((part) => mimeParts(part.replace(/^\r?\n/, '')));
  }
  const encoding = /^content-transfer-encoding:\s*(\S+)/im.exec(head)?.[1]?.toLowerCase();
  let text = body;
  if (encoding === 'base64') text = Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8');
  if (encoding === 'quoted-printable') {
    const bytes = body
      .replace(/=\r?\n/g, '')
      .replace(/=([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
    text = Buffer.from(bytes, 'latin1').toString('utf8');
  }
  return [{ type: type.split(';')[0]!.trim().toLowerCase(), text }];
}

/** Waits (up to 30 s) for a mail to `to` whose text part links to `page`, and returns that link. */
async function linkInMail(
  messages: Received[],
  to: string,
  base: string,
  page: '/reset-password' | '/verify-email',
): Promise<string> {
  const pattern = new RegExp(`${base.replaceAll('.', '\\.')}${page}#token=[A-Za-z0-9_-]+`);
  const deadline = Date.now() + 30_000;
  for (;;) {
    for (const message of messages.filter((m) => m.to.includes(to.toLowerCase()))) {
      const text = mimeParts(message.raw).find((p) => p.type === 'text/plain')?.text ?? '';
      const link = pattern.exec(text)?.[0];
      if (link) return link;
    }
    if (Date.now() > deadline) {
      throw new Error(`no mail to ${to} with a ${page} link within 30 s (${messages.length} received)`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

// ---- the browser ---------------------------------------------------------------------------------

interface Watched {
  page: Page;
  context: BrowserContext;
  /** Console errors and warnings, uncaught exceptions and CSP violations: all must stay empty. */
  problems: string[];
  /** Every request the page made: method, URL, body, and whether it carried a Referer. */
  requests: { method: string; url: URL; body: string | null; referer: string | undefined }[];
}

async function openPage(
  browser: Browser,
  url: string,
  mockApi?: (route: Route) => unknown,
): Promise<Watched> {
  const context = await browser.newContext(PHONE);
  if (mockApi) await context.route('**/api/**', mockApi);
  const page = await context.newPage();
  const watched: Watched = { page, context, problems: [], requests: [] };
  page.on('console', (message) => {
    if (message.type() !== 'error' && message.type() !== 'warning') return;
    // The browser's own note that an API call answered 4xx/5xx or failed: the page shows those.
    const from = message.location().url;
    if (message.text().startsWith('Failed to load resource') && new URL(from).pathname.startsWith('/api/'))
      return;
    watched.problems.push(`console ${message.type()}: ${message.text()} @ ${from}`);
  });
  page.on('pageerror', (error) => watched.problems.push(`page error: ${error.message}`));
  page.on('request', (request) =>
    watched.requests.push({
      method: request.method(),
      url: new URL(request.url()),
      body: request.postData(),
      referer: request.headers().referer,
    }),
  );
  // Init scripts are injected by the browser, outside the page's CSP: this listener sees every
  // violation, even one that leaves no console message.
  await page.addInitScript({
    content: `document.addEventListener('securitypolicyviolation', (event) =>
      console.error('CSP violation: ' + event.violatedDirective + ' ' + event.blockedURI));`,
  });
  await page.goto(url, { waitUntil: 'networkidle' });
  return watched;
}

/** What a page must never do, whatever its outcome. */
function assertClean(w: Watched, origin: string): void {
  assert.deepEqual(w.problems, [], 'no console errors, page errors or CSP violations');
  for (const r of w.requests) {
    assert.equal(r.url.origin, origin, `${r.url.href}: every request goes to Usher itself`);
    assert.equal(r.referer ?? '', '', `${r.url.href}: no Referer (it could carry the link)`);
  }
}

const apiCalls = (w: Watched) => w.requests.filter((r) => r.url.pathname.startsWith('/api/'));
const text = (w: Watched, selector: string) => w.page.locator(selector).innerText();

describeUnless(skip, 'Pages for mail links in headless Chromium', () => {
  describeEachStore('Chromium', (store) => {
    let smtp: Awaited<ReturnType<typeof startSmtp>>;
    let t: TestApp;
    let base: string;
    let browser: Browser;

    before(async () => {
      smtp = await startSmtp();
      // PUBLIC_URL must name the port the app will listen on, so the port is chosen first.
      const port = await freePort();
      base = `http://127.0.0.1:${port}`;
      const defaults = testConfig(store, 'b');
      t = await startApp(store, 'b', { publicUrl: base, mail: { ...defaults.mail, smtpUrl: smtp.url } });
      await t.app.listen({ port, host: '127.0.0.1' });
      browser = await launchChromium();
    });
    after(async () => {
      await browser?.close();
      await t?.close();
      await smtp?.close();
    });

    test('ISSUE 13: the reset page takes the token out of the address bar, renders its form, and checks the two passwords match without a request', async () => {
      const w = await openPage(browser, `${base}/reset-password#token=abc`);
      try {
        assert.doesNotMatch(w.page.url(), /token/, 'the token is gone from the address bar');
        assert.equal(w.page.url(), `${base}/reset-password`);
        assert.equal(await w.page.title(), 'Choose a new password');
        assert.equal(await text(w, 'h1'), 'Choose a new password');
        assert.ok(await w.page.locator('form#reset').isVisible(), 'the form is shown');
        await w.page.fill('#password', 'a new password 1');
        await w.page.fill('#confirm', 'a new password 2');
        await w.page.click('button[type=submit]');
        assert.match(await text(w, '#message'), /The two passwords are not the same/);
        assert.equal(await w.page.locator('#confirm').getAttribute('aria-invalid'), 'true');
        assert.deepEqual(apiCalls(w), [], 'nothing is sent while the passwords differ');
        assertClean(w, base);
      } finally {
        await w.context.close();
      }
    });

    test('ISSUE 13: without a token, each page says the link is incomplete and offers no form', async () => {
      for (const path of [
        '/reset-password',
        '/verify-email',
        '/reset-password#other=1',
        '/verify-email?x=1',
      ]) {
        const w = await openPage(browser, `${base}${path}`);
        try {
          assert.match(await text(w, '#message'), /This link is incomplete/, path);
          assert.equal(await w.page.locator('form').isVisible(), false, path);
          assert.deepEqual(apiCalls(w), [], path);
          assertClean(w, base);
        } finally {
          await w.context.close();
        }
      }
    });

    test('ISSUE 13: a ?token= link works too (for apps that link that way), and is cleared from the address bar', async () => {
      const w = await openPage(browser, `${base}/verify-email?token=fromTheQuery`);
      try {
        assert.equal(w.page.url(), `${base}/verify-email`);
        const [call] = apiCalls(w);
        assert.equal(call?.method, 'POST');
        assert.equal(call?.url.pathname, '/api/email/verify');
        assert.deepEqual(JSON.parse(call?.body ?? ''), { token: 'fromTheQuery' });
        assertClean(w, base);
      } finally {
        await w.context.close();
      }
    });

    test('ISSUE 13: every answer of the reset API is shown in words (answers stubbed in the browser; the page and its assets are real)', async () => {
      const answers: Record<string, { status: number; headers?: Record<string, string>; body?: unknown }> = {
        invalid: { status: 400, body: { error: 'INVALID_TOKEN', message: 'The link is not valid.' } },
        rule: {
          status: 400,
          body: {
            error: 'VALIDATION_FAILED',
            message:
              'password: is one of the most commonly used passwords, which attackers try first; choose another',
          },
        },
        html: { status: 400, body: { error: 'VALIDATION_FAILED', message: 'password: <b id="x">bold</b>' } },
        throttled: { status: 429, headers: { 'retry-after': '600' }, body: { error: 'TOO_MANY_REQUESTS' } },
        broken: { status: 500, body: { error: 'INTERNAL', message: 'Something went wrong on our side.' } },
        proxy: { status: 502, headers: { 'content-type': 'text/html' }, body: '<h1>Bad gateway</h1>' },
        ok: { status: 204 },
      };
      let next = 'invalid';
      const sent: unknown[] = [];
      const w = await openPage(browser, `${base}/reset-password#token=tokenFromTheMail`, async (route) => {
        sent.push(route.request().postDataJSON());
        if (next === 'offline') return route.abort('internetdisconnected');
        const a = answers[next]!;
        return route.fulfill({
          status: a.status,
          headers: a.headers ?? { 'content-type': 'application/json' },
          body: a.body === undefined ? '' : typeof a.body === 'string' ? a.body : JSON.stringify(a.body),
        });
      });
      const submit = async (answer: string) => {
        next = answer;
        await w.page.fill('#password', 'new password 123');
        await w.page.fill('#confirm', 'new password 123');
        await w.page.click('button[type=submit]');
        await w.page.waitForSelector('#submit:enabled', { state: 'attached' });
        return text(w, '#message');
      };
      try {
        for (const [answer, expected] of [
          [
            'rule',
            /^Your new password is one of the most commonly used passwords, which attackers try first; choose another\.$/,
          ],
          ['throttled', /^Too many attempts\. Try again in 10 minutes\.$/],
          ['broken', /^Something went wrong, and your password may not have been changed\./],
          ['proxy', /^Something went wrong/],
          ['offline', /^The server could not be reached\. Check your connection and try again\.$/],
        ] as const) {
          assert.match(await submit(answer), expected, answer);
          assert.ok(
            await w.page.locator('form#reset').isVisible(),
            `${answer}: the form stays, to try again`,
          );
        }
        assert.match(await submit('html'), /^Your new password <b id="x">bold<\/b>\./, 'shown as text');
        assert.equal(await w.page.locator('#x').count(), 0, 'text from the API is never parsed as HTML');
        mkdirSync(RESULTS, { recursive: true });
        await w.page.screenshot({ path: fileURLToPath(new URL('reset-password-error.png', RESULTS)) });

        await submit('ok');
        assert.match(await text(w, '#message'), /^Your password was changed\. You can now sign in with it\./);
        assert.match(await text(w, '#message'), /every session of your account was signed out/);
        assert.equal(await text(w, 'h1'), 'Password changed');
        assert.equal(await w.page.locator('form#reset').isVisible(), false);
        assert.deepEqual(sent.at(-1), { token: 'tokenFromTheMail', password: 'new password 123' });
        assertClean(w, base);
      } finally {
        await w.context.close();
      }
      const again = await openPage(browser, `${base}/reset-password#token=tokenFromTheMail`, (route) =>
        route.fulfill({
          status: 400,
          contentType: 'application/json',
          body: JSON.stringify(answers.invalid!.body),
        }),
      );
      try {
        await again.page.fill('#password', 'new password 123');
        await again.page.fill('#confirm', 'new password 123');
        await again.page.click('button[type=submit]');
        await again.page.waitForSelector('form#reset', { state: 'hidden' });
        assert.equal(await text(again, '#message'), `${EXPIRED} Ask for a new one.`);
        assertClean(again, base);
      } finally {
        await again.context.close();
      }
    });

    test('ISSUE 13: every answer of the verify API is shown in words, and a failure can be tried again (answers stubbed in the browser)', async () => {
      const statuses = [500, 204];
      const w = await openPage(browser, `${base}/verify-email#token=tokenFromTheMail`, (route) => {
        const status = statuses.shift() ?? 204;
        return route.fulfill(
          status === 204
            ? { status }
            : {
                status,
                contentType: 'application/json',
                body: JSON.stringify({ error: 'INTERNAL', message: 'x' }),
              },
        );
      });
      try {
        assert.match(
          await text(w, '#message'),
          /^Something went wrong, and your address is not confirmed yet\./,
        );
        await w.page.click('#retry');
        await w.page.waitForSelector('.message.ok');
        assert.match(await text(w, '#message'), /^Your email address is confirmed\./);
        assert.equal(await text(w, 'h1'), 'Email address confirmed');
        assert.equal(await w.page.locator('#retry').isVisible(), false);
        assert.equal(apiCalls(w).length, 2);
        assertClean(w, base);
      } finally {
        await w.context.close();
      }
    });

    // Needs the lead's POST /api/password/reset (until then the route is a 404).
    test('ISSUE 13: a made-up reset token gets the API answer INVALID_TOKEN, shown as an expired or used link', async () => {
      const w = await openPage(browser, `${base}/reset-password#token=abc`);
      try {
        await w.page.fill('#password', 'a brand new password');
        await w.page.fill('#confirm', 'a brand new password');
        await w.page.click('button[type=submit]');
        await w.page.waitForSelector('#submit:enabled', { state: 'attached' });
        assert.match(await text(w, '#message'), /expired or was already used/);
        const [call] = apiCalls(w);
        assert.deepEqual(JSON.parse(call?.body ?? ''), { token: 'abc', password: 'a brand new password' });
        assertClean(w, base);
      } finally {
        await w.context.close();
      }
    });

    // Needs the lead's POST /api/email/verify.
    test('ISSUE 13: a made-up verification token is shown as an expired or used link', async () => {
      const w = await openPage(browser, `${base}/verify-email#token=abc`);
      try {
        await w.page.waitForSelector('.message:not(.info)');
        assert.match(await text(w, '#message'), /expired or was already used/);
        assertClean(w, base);
      } finally {
        await w.context.close();
      }
    });

    // Needs the lead's API and mail: forgot, the mail over SMTP, reset, sign-in.
    test('ISSUE 13: the whole reset: the link from a real mail, a new password typed in Chromium, then only the new password signs in', async () => {
      const user = newUser();
      assert.equal((await postJson(`${base}/api/users`, user)).status, 201);
      assert.equal((await postJson(`${base}/api/password/forgot`, { email: user.email })).status, 202);
      const link = await linkInMail(smtp.messages, user.email, base, '/reset-password');

      const w = await openPage(browser, link);
      try {
        assert.equal(w.page.url(), `${base}/reset-password`, 'the token is gone from the address bar');
        const newPassword = 'a fresh and long password';
        await w.page.fill('#password', newPassword);
        await w.page.fill('#confirm', newPassword);
        if (store.kind === 'sqlite') {
          mkdirSync(SCREENSHOTS, { recursive: true });
          await w.page.screenshot({ path: fileURLToPath(new URL('reset-password-form.png', SCREENSHOTS)) });
        }
        await w.page.click('button[type=submit]');
        await w.page.waitForSelector('.message.ok');
        assert.match(await text(w, '#message'), /^Your password was changed\. You can now sign in with it\./);
        if (store.kind === 'sqlite') {
          await w.page.screenshot({ path: fileURLToPath(new URL('reset-password.png', SCREENSHOTS)) });
        }
        assertClean(w, base);

        const signIn = (password: string) => postJson(`${base}/api/signin`, { email: user.email, password });
        assert.equal((await signIn(newPassword)).status, 200, 'the new password signs in');
        assert.equal((await signIn(user.password)).status, 401, 'the old one no longer does');
      } finally {
        await w.context.close();
      }
    });

    // Needs the lead's API and mail: the verification mail sent at registration.
    test('ISSUE 13: the verification link from the registration mail confirms the address in Chromium', async () => {
      const user = newUser();
      assert.equal((await postJson(`${base}/api/users`, user)).status, 201);
      const link = await linkInMail(smtp.messages, user.email, base, '/verify-email');
      const w = await openPage(browser, link);
      try {
        assert.equal(w.page.url(), `${base}/verify-email`);
        await w.page.waitForSelector('.message.ok');
        assert.match(await text(w, '#message'), /^Your email address is confirmed\./);
        assertClean(w, base);
      } finally {
        await w.context.close();
      }
    });
  });
});
