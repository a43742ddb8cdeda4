// The console (GET /admin, issues 29 and 30) in a real headless Chromium against a real listening
// Usher on each store: an admin signs in, finds and pages through users, opens one and acts on them
// (ends their sessions, disables and enables them, removes their second factors, changes their
// role, sends mails, deletes), invites someone; reads the audit log (filtered, paged, and a user's
// own records in their view); adds a webhook to a local receiver, sees its secret once, follows
// and retries its deliveries, and deletes it. A support user sees only what their role may do
// (the audit log, no webhooks); a plain user is told the console is not for them; a second factor
// is asked for on sign-in. Every request goes to Usher itself, every control has an accessible
// name, the page fits a 390 px phone (the audit log and webhooks 375 px), and the keyboard reaches
// the search, the audit log's filters and the webhook form. The first admin is made with the CLI
// (`usher users set-role`), as an operator would. Skipped, visibly, without Chromium.
// Screenshots go to docs/screenshots/ only with UPDATE_SCREENSHOTS=1.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Secret, TOTP } from 'otpauth';
import type { Browser, BrowserContext, BrowserContextOptions, Page, Response } from 'playwright-core';
import { loadConfig } from '../../src/config.ts';
import { asUser, NO_THROTTLE, newUser, startApp, type TestApp } from '../helpers/app.ts';
import { launchChromium, skipWithoutChromium } from '../helpers/browser.ts';
import { freshDatabaseUrl, postgresAvailable } from '../helpers/databases.ts';
import { assertScriptsAreFiles } from '../helpers/pages.ts';
import { freePort, runProcess } from '../helpers/process.ts';
import { describeUnless } from '../helpers/skip.ts';

const skip = skipWithoutChromium;
// The committed screenshots in docs/screenshots/ are rewritten only when asked
// (UPDATE_SCREENSHOTS=1 npm test), so a test run leaves the working tree as it was.
const SCREENSHOTS = new URL(
  process.env.UPDATE_SCREENSHOTS === '1' ? '../../docs/screenshots/' : '../../test-results/',
  import.meta.url,
);
const PHONE: BrowserContextOptions = {
  viewport: { width: 390, height: 844 },
  deviceScaleFactor: 2,
  isMobile: true,
  hasTouch: true,
};
/** A small phone, for the audit log and webhooks. */
const NARROW: BrowserContextOptions = { ...PHONE, viewport: { width: 375, height: 812 } };
const DESKTOP: BrowserContextOptions = { viewport: { width: 1280, height: 900 } };
const CLI = fileURLToPath(new URL('../../bin/usher.mjs', import.meta.url));
const PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
  "form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/** Polls `condition` from Node (up to 20 s: far from a loaded machine's noise). */
async function until(condition: () => Promise<boolean>, what = 'condition'): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`${what}: not met within 20 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface Account {
  email: string;
  name: string;
  password: string;
}

/**
 * A browser page's DOM, as much of it as the checks below read (the tests have no DOM types). The
 * functions run in the page are sent there as text, so each casts its own way to the document.
 */
interface Control {
  id: string;
  tagName: string;
  textContent: string | null;
  outerHTML: string;
  labels?: ArrayLike<{ textContent: string | null }> | null;
  getAttribute(name: string): string | null;
}
interface Doc {
  activeElement: { id: string } | null;
  documentElement: { scrollWidth: number };
  querySelectorAll(selector: string): ArrayLike<Control>;
}

/** The controls (input, select, button) in the whole page, shown or not, that have no name at all. */
function unlabelled(page: Page): Promise<string[]> {
  return page.locator('body').evaluate((body) => {
    const missing: string[] = [];
    for (const node of Array.from(
      (body as unknown as { ownerDocument: Doc }).ownerDocument.querySelectorAll(
        'input, select, button, textarea',
      ),
    )) {
      const labels = node.labels ? Array.from(node.labels, (l) => l.textContent ?? '').join(' ') : '';
      const name =
        node.getAttribute('aria-label') ??
        (labels.trim() || (node.tagName === 'BUTTON' ? (node.textContent ?? '') : ''));
      if (!name.trim()) missing.push(node.id || node.outerHTML.slice(0, 80));
    }
    return missing;
  });
}

/**
 * The controls shown that Chromium's accessibility tree gives no name: what a screen reader would
 * read for each button, field, list box and link on the screen now.
 */
async function namelessInAccessibilityTree(context: BrowserContext, page: Page): Promise<string[]> {
  const cdp = await context.newCDPSession(page);
  try {
    const { nodes } = (await cdp.send('Accessibility.getFullAXTree')) as {
      nodes: { ignored: boolean; role?: { value?: string }; name?: { value?: string } }[];
    };
    const controls = new Set([
      'button',
      'textbox',
      'searchbox',
      'combobox',
      'checkbox',
      'link',
      'spinbutton',
    ]);
    const roles = nodes.filter((n) => !n.ignored && controls.has(String(n.role?.value)));
    assert.ok(roles.length > 0, 'the accessibility tree lists the controls');
    return roles.filter((n) => !String(n.name?.value ?? '').trim()).map((n) => String(n.role?.value));
  } finally {
    await cdp.detach();
  }
}

async function assertLabelled(context: BrowserContext, page: Page, where: string): Promise<void> {
  assert.deepEqual(await unlabelled(page), [], `${where}: every input, select and button has a label`);
  assert.deepEqual(
    await namelessInAccessibilityTree(context, page),
    [],
    `${where}: every control shown has an accessible name`,
  );
}

const scrollWidth = (page: Page) =>
  page
    .locator('body')
    .evaluate(
      (body) => (body as unknown as { ownerDocument: Doc }).ownerDocument.documentElement.scrollWidth,
    );
/**
 * What sticks out past the right edge of a page `width` px wide (empty when the page fits): each
 * element as tag#id.class and its right edge, for the assertion's message.
 */
const overflowing = (page: Page, width: number) =>
  page.locator('body').evaluate((body, width) => {
    const doc = (body as unknown as { ownerDocument: Doc }).ownerDocument as unknown as {
      documentElement: { scrollWidth: number };
      querySelectorAll(s: string): ArrayLike<{
        id: string;
        tagName: string;
        className: string;
        getBoundingClientRect(): { right: number; width: number };
      }>;
    };
    if (doc.documentElement.scrollWidth <= width) return [];
    return Array.from(doc.querySelectorAll('body *'))
      .filter((e) => e.getBoundingClientRect().width > 0 && e.getBoundingClientRect().right > width + 0.5)
      .map(
        (e) =>
          `${e.tagName.toLowerCase()}#${e.id}.${e.className} ${Math.round(e.getBoundingClientRect().right)}`,
      );
  }, width);
/** The outline the focused element is drawn with (`none` when focus would be invisible). */
const focusOutline = (page: Page) =>
  page.locator('body').evaluate((body) => {
    const doc = (body as unknown as { ownerDocument: Doc }).ownerDocument as unknown as {
      activeElement: unknown;
      defaultView: { getComputedStyle(e: unknown): { outlineStyle: string; outlineWidth: string } };
    };
    const style = doc.defaultView.getComputedStyle(doc.activeElement);
    return `${style.outlineStyle} ${style.outlineWidth}`;
  });
const focusedId = (page: Page) =>
  page
    .locator('body')
    .evaluate((body) => (body as unknown as { ownerDocument: Doc }).ownerDocument.activeElement?.id ?? '');

for (const kind of ['sqlite', 'postgres'] as const) {
  const skipRun =
    skip || (kind === 'postgres' && !postgresAvailable ? 'TEST_DATABASE_URL is not set' : false);
  describeUnless(skipRun, `Admin console in headless Chromium [${kind}]`, () => {
    let t: TestApp;
    let base: string;
    let databaseUrl: string;
    let browser: Browser;
    let drop: () => Promise<void> = async () => {};
    let admin: Account & { id: number };
    /** The admin's Bearer token, for the checks made beside the page. */
    let adminToken: string;
    const encryptionKey = randomBytes(32);

    /** Registers someone; returns their id. */
    async function register(account: Account): Promise<number> {
      const res = await t.post('/api/users', account);
      assert.equal(res.statusCode, 201, res.body);
      return Number(res.json().id);
    }

    /** `usher users set-role --email E ROLE`, against the app's database, as an operator runs it. */
    async function setRole(email: string, role: 'user' | 'support' | 'admin'): Promise<void> {
      const run = await runProcess(process.execPath, [CLI, 'users', 'set-role', '--email', email, role], {
        DATABASE_URL: databaseUrl,
        ENCRYPTION_KEY: encryptionKey.toString('base64'),
      });
      assert.equal(run.code, 0, `set-role: ${run.stdout}${run.stderr}`);
    }

    /** A session by POST /api/sessions: its Bearer token. */
    async function sessionOf(account: Account, userAgent = 'UsherTestClient/1.0'): Promise<string> {
      const res = await t.inject({
        method: 'POST',
        url: '/api/sessions',
        headers: { 'content-type': 'application/json', 'user-agent': userAgent },
        payload: JSON.stringify({ email: account.email, password: account.password }),
      });
      assert.equal(res.statusCode, 201, res.body);
      return res.json().token as string;
    }

    const sessionAnswers = (token: string) =>
      t
        .inject({ method: 'GET', url: '/api/session', headers: { authorization: `Bearer ${token}` } })
        .then((res) => res.statusCode);

    const signinAnswers = (account: Account) =>
      t.post('/api/signin', { email: account.email, password: account.password });

    before(async () => {
      const fresh = await freshDatabaseUrl(kind);
      drop = fresh.drop;
      databaseUrl = fresh.url;
      const port = await freePort();
      base = `http://localhost:${port}`;
      // Webhooks may go to a receiver on this machine, and retries due are looked for often.
      const { webhooks } = loadConfig({
        DATABASE_URL: fresh.url,
        PROFILE: 'b',
        WEBHOOK_ALLOW_PRIVATE: 'true',
        WEBHOOK_POLL_MS: '200',
      });
      t = await startApp({ kind, url: fresh.url }, 'b', {
        publicUrl: base,
        encryptionKey,
        throttle: { ...NO_THROTTLE },
        webhooks,
      });
      await t.app.listen({ port, host: '127.0.0.1' });
      browser = await launchChromium();
      const account = newUser({ name: 'Grace Admin' });
      admin = { ...account, id: await register(account) };
      await setRole(admin.email, 'admin');
      adminToken = await sessionOf(admin);
    });
    after(async () => {
      await browser?.close();
      await t?.close();
      await drop();
    });

    /**
     * A new browser context on /admin, signed in as `account`, with what the page asked of other
     * origins and what it complained of collected.
     */
    async function openConsole(options: BrowserContextOptions, account?: Account) {
      const context = await browser.newContext(options);
      const page = await context.newPage();
      const problems: string[] = [];
      const origins = new Set<string>();
      page.on('console', (message) => {
        if (message.type() !== 'error' && message.type() !== 'warning') return;
        const from = message.location().url;
        // The browser's notes on the API's 4xx answers (401 before signing in, 409, 403): the page handles them.
        if (
          message.text().startsWith('Failed to load resource') &&
          new URL(from).pathname.startsWith('/api/')
        )
          return;
        problems.push(`console ${message.type()}: ${message.text()} @ ${from}`);
      });
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      page.on('request', (request) => origins.add(new URL(request.url()).origin));
      await page.addInitScript({
        content: `document.addEventListener('securitypolicyviolation', (event) =>
        console.error('CSP violation: ' + event.violatedDirective + ' ' + event.blockedURI));`,
      });
      await page.goto(`${base}/admin`, { waitUntil: 'networkidle' });
      if (account) {
        await page.fill('#email', account.email);
        await page.fill('#password', account.password);
        await page.click('#signin-submit');
      }
      return { context, page, problems, origins };
    }

    const rows = (page: Page) => page.locator('#results-body > tr');
    const message = (page: Page) => page.locator('#message');

    /**
     * Does `action` and waits until the page has drawn the answer of the search it starts, the one
     * whose query `matches` (an earlier search's answer, still on screen, does not count).
     */
    async function searched(
      page: Page,
      action: () => Promise<unknown>,
      matches: (query: URLSearchParams) => boolean,
    ): Promise<void> {
      const answered = page.waitForResponse((response) => {
        const url = new URL(response.url());
        return url.pathname === '/api/admin/users' && matches(url.searchParams);
      });
      await action();
      assert.equal((await answered).status(), 200);
      await until(async () => {
        const status = await page.locator('#results-status').innerText();
        return status !== 'Searching…' && status.includes('match');
      }, 'the results drawn');
    }

    /** Runs a search from the query box (the filters as they are). */
    async function search(page: Page, q: string): Promise<void> {
      await page.fill('#q', q);
      await searched(
        page,
        () => page.press('#q', 'Enter'),
        (query) => (query.get('q') ?? '') === q,
      );
    }

    /** Chooses a filter (it applies at once). */
    async function filter(page: Page, id: 'status' | 'role', value: string): Promise<void> {
      await searched(
        page,
        () => page.selectOption(`#${id}`, value),
        (query) => (query.get(id) ?? '') === value,
      );
    }

    /** Opens a user from the results by their email. */
    async function openUser(page: Page, email: string): Promise<void> {
      await page.getByRole('link', { name: email, exact: true }).click();
      await page.waitForSelector('#user-view', { state: 'visible' });
      await until(async () => (await page.locator('#user-email').innerText()) === email, `${email}'s view`);
    }

    /** Answers the page's confirmation dialog: the confirming button, after `fill` when given. */
    async function confirm(page: Page, fill?: { reason?: string; typed?: string }): Promise<void> {
      const dialog = page.locator('#confirm');
      await dialog.waitFor({ state: 'visible' });
      if (fill?.reason !== undefined) await page.fill('#confirm-reason', fill.reason);
      if (fill?.typed !== undefined) await page.fill('#confirm-type', fill.typed);
      await page.click('#confirm-ok');
      await dialog.waitFor({ state: 'hidden' });
    }

    async function saysOk(page: Page, pattern: RegExp): Promise<void> {
      await until(
        async () =>
          (await message(page).isVisible()) &&
          (await message(page).getAttribute('class')) === 'message ok' &&
          pattern.test(await message(page).innerText()),
        `the message ${pattern}`,
      );
    }

    /** Presses Tab from where the focus is until `id` has it (at most `most` presses). */
    async function tabTo(page: Page, id: string, most: number): Promise<void> {
      let tabs = 0;
      while ((await focusedId(page)) !== id) {
        assert.ok(++tabs <= most, `Tab reaches #${id} within ${most} presses`);
        await page.keyboard.press('Tab');
      }
    }

    /**
     * Does `action` and waits until the audit log has drawn the answer of the search it starts, the
     * one whose query `matches` (a user's view reads their records too: that one does not count).
     */
    async function audited(
      page: Page,
      action: () => Promise<unknown>,
      matches: (query: URLSearchParams) => boolean,
    ): Promise<Response> {
      const answered = page.waitForResponse((response) => {
        const url = new URL(response.url());
        return (
          url.pathname === '/api/admin/audit' &&
          url.searchParams.get('size') !== '10' &&
          matches(url.searchParams)
        );
      });
      await action();
      const response = await answered;
      assert.equal(response.status(), 200);
      await until(async () => {
        const status = await page.locator('#audit-status').innerText();
        return status !== 'Loading…' && /match/.test(status);
      }, 'the records drawn');
      return response;
    }

    const totalOf = (response: Response) => Number(response.headers()['x-total-count']);

    /** Does `action` and waits until the deliveries it asks for are drawn. */
    async function deliveriesDrawn(page: Page, action: () => Promise<unknown>): Promise<void> {
      const answered = page.waitForResponse((response) =>
        new URL(response.url()).pathname.endsWith('/deliveries'),
      );
      await action();
      assert.equal((await answered).status(), 200);
      await until(async () => {
        const status = await page.locator('#deliveries-status').innerText();
        return status !== 'Loading…' && /deliver/.test(status);
      }, 'the deliveries drawn');
    }

    /** A local receiver of webhooks: it answers 503 until `up`, then 200, and keeps what it was sent. */
    async function startReceiver() {
      const received: { headers: IncomingHttpHeaders; body: string }[] = [];
      const state = { up: false };
      const server = createServer((request, response) => {
        let body = '';
        request.setEncoding('utf8');
        request.on('data', (chunk: string) => {
          body += chunk;
        });
        request.on('end', () => {
          received.push({ headers: request.headers, body });
          response.statusCode = state.up ? 200 : 503;
          response.end(state.up ? 'thanks' : 'the receiver is down for maintenance');
        });
      });
      const port = await freePort();
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
      return {
        url: `http://127.0.0.1:${port}/usher-hook`,
        received,
        state,
        close: () => new Promise<void>((resolve) => server.close(() => resolve())),
      };
    }

    /** The search and a user's view at a desktop's width, in a context of their own. */
    async function desktopScreenshots(user: Account): Promise<void> {
      const desktop = await openConsole(DESKTOP, admin);
      try {
        await desktop.page.waitForSelector('#search-view', { state: 'visible' });
        await search(desktop.page, 'Lovelace');
        await desktop.page.mouse.move(0, 0);
        await desktop.page.screenshot({
          path: fileURLToPath(new URL('admin-search-desktop.png', SCREENSHOTS)),
        });
        await openUser(desktop.page, user.email);
        await until(async () => (await desktop.page.locator('#sessions > li.item').count()) > 0, 'sessions');
        await desktop.page.mouse.move(0, 0);
        await desktop.page.screenshot({
          path: fileURLToPath(new URL('admin-user-desktop.png', SCREENSHOTS)),
          fullPage: true,
        });
        await assertLabelled(desktop.context, desktop.page, "a user's view, desktop");
        assert.deepEqual(desktop.problems, [], 'no console errors, page errors or CSP violations');
        assert.deepEqual([...desktop.origins], [base], 'every request goes to Usher itself');
      } finally {
        await desktop.context.close();
      }
    }

    test('ISSUE 29: an admin signs in on /admin, searches by keyboard, pages and filters, opens a user, ends their sessions, disables and enables them, removes their second factors, sends mails, changes their role; only Usher is asked, every control is named, 390 px fits', async () => {
      const ada = newUser({ name: 'Ada Lovelace' });
      const adaId = await register(ada);
      for (let i = 1; i <= 24; i++)
        await register(newUser({ name: `Pager Person ${String(i).padStart(2, '0')}` }));
      // Ada has two-step sign-in on, and a session from another client.
      const adaToken = await sessionOf(ada);
      const setup = await asUser(t, adaToken).post('/api/mfa/totp', { password: ada.password });
      assert.equal(setup.statusCode, 200, setup.body);
      const code = new TOTP({
        secret: Secret.fromBase32(setup.json().secret),
        digits: 6,
        period: 30,
      }).generate();
      assert.equal((await asUser(t, adaToken).post('/api/mfa/totp/confirm', { code })).statusCode, 200);

      const { context, page, problems, origins } = await openConsole(PHONE);
      try {
        assert.ok(await page.locator('#signin').isVisible(), 'not signed in: the sign-in form');
        assert.equal(await page.locator('#search-view').isVisible(), false);
        await assertLabelled(context, page, 'sign-in');
        await page.fill('#email', admin.email);
        await page.fill('#password', 'not the password');
        await page.click('#signin-submit');
        await page.waitForSelector('#message.error');
        assert.match(await message(page).innerText(), /not right/);
        await page.fill('#password', admin.password);
        await page.click('#signin-submit');
        await page.waitForSelector('#search-view', { state: 'visible' });
        assert.equal(await page.locator('#me-email').innerText(), admin.email);
        assert.equal(await page.locator('#me-role').innerText(), 'Admin');
        assert.ok(await page.locator('#nav-invite').isVisible(), 'an admin may invite');
        // Issue 30: the audit log and (for an admin) webhooks have their places in the console.
        assert.ok(await page.getByRole('link', { name: 'Audit log', exact: true }).isVisible());
        assert.ok(await page.getByRole('link', { name: 'Webhooks', exact: true }).isVisible());
        await until(async () => (await rows(page).count()) > 0, 'the first page of everyone');

        // The keyboard: from the top of the page, Tab reaches the query box, and Enter searches.
        await page.locator('#heading').click();
        let tabs = 0;
        while ((await focusedId(page)) !== 'q') {
          assert.ok(++tabs <= 10, 'Tab reaches the query box within 10 presses');
          await page.keyboard.press('Tab');
        }
        assert.match(await focusOutline(page), /^solid [1-9]/, 'the focused box shows it');
        await page.keyboard.press('Tab');
        assert.equal(await focusedId(page), 'search-submit');
        assert.match(await focusOutline(page), /^solid [1-9]/, 'the focused button shows it');
        await page.keyboard.press('Shift+Tab');
        await page.keyboard.type('lovelace');
        await searched(
          page,
          () => page.keyboard.press('Enter'),
          (query) => query.get('q') === 'lovelace',
        );
        assert.equal(await page.locator('#results-status').innerText(), '1 user match.');
        assert.equal(await rows(page).count(), 1);
        assert.match(await rows(page).innerText(), new RegExp(ada.email.replace(/\./g, '\\.')));
        assert.match(await rows(page).innerText(), /Ada Lovelace/);
        assert.match(new URL(page.url()).hash, /q=lovelace/, 'the search is in the fragment');
        assert.equal(await page.locator('#results-status').getAttribute('aria-live'), 'polite');
        await assertLabelled(context, page, 'search');
        assert.ok((await scrollWidth(page)) <= 390, 'the results fit 390 px');
        mkdirSync(SCREENSHOTS, { recursive: true });
        await page.mouse.move(0, 0);
        await page.screenshot({ path: fileURLToPath(new URL('admin-search.png', SCREENSHOTS)) });

        // Paging from X-Total-Count: 24 of them, 20 a page.
        await search(page, 'Pager Person');
        assert.equal(await page.locator('#results-status').innerText(), '24 users match; showing 1 to 20.');
        assert.equal(await rows(page).count(), 20);
        assert.equal(await page.locator('#page-text').innerText(), 'Page 1 of 2');
        assert.ok(await page.locator('#page-prev').isDisabled());
        await page.click('#page-next');
        await until(async () => (await page.locator('#page-text').innerText()) === 'Page 2 of 2', 'page 2');
        await until(async () => (await rows(page).count()) === 4, 'four on page 2');
        assert.equal(await page.locator('#results-status').innerText(), '24 users match; showing 21 to 24.');
        assert.ok(await page.locator('#page-next').isDisabled());
        assert.ok((await scrollWidth(page)) <= 390, 'the pager fits 390 px');
        await page.goBack();
        await until(
          async () => (await page.locator('#page-text').innerText()) === 'Page 1 of 2',
          'Back: page 1',
        );

        // Filters: the role (every row an admin, ours among them), then nothing found.
        await page.fill('#q', '');
        await filter(page, 'role', 'admin');
        const roles = await page.locator('#results-body td.role').allInnerTexts();
        assert.ok(roles.length > 0 && roles.every((r) => r === 'Admin'), `admins only: ${roles}`);
        assert.ok((await page.locator('#results-body td.email').allInnerTexts()).includes(admin.email));
        await filter(page, 'role', '');
        await search(page, 'nobody-has-this-name');
        assert.equal(await page.locator('#results-status').innerText(), 'No users match.');
        assert.equal(await page.locator('#results').isVisible(), false);

        // Ada's view: details, the other client's session, TOTP on.
        await search(page, 'Lovelace');
        await openUser(page, ada.email);
        assert.equal(await page.locator('#user-title').innerText(), 'Ada Lovelace');
        assert.match(page.url(), new RegExp(`#user=${adaId}$`));
        const sessions = page.locator('#sessions > li.item');
        await until(async () => (await sessions.count()) === 1, "Ada's one session");
        assert.match(await sessions.innerText(), /UsherTestClient\/1\.0/);
        assert.match(
          await page.locator('#factors').innerText(),
          /Two-step sign-in \(authenticator app\)\s+On/,
        );
        assert.match(await page.locator('#details').innerText(), /Status\s+Active/);
        for (const id of [
          '#act-disable',
          '#act-delete',
          '#act-mfa',
          '#act-sessions',
          '#act-reset',
          '#act-verify',
        ])
          assert.ok(await page.locator(id).isVisible(), `${id} is offered to an admin`);
        assert.ok(await page.locator('#role-form').isVisible());
        await assertLabelled(context, page, "a user's view");
        assert.ok((await scrollWidth(page)) <= 390, "a user's view fits 390 px");
        await page.mouse.move(0, 0);
        await page
          .locator('#back')
          .evaluate((e) => (e as unknown as { scrollIntoView(): void }).scrollIntoView());
        await page.screenshot({ path: fileURLToPath(new URL('admin-user.png', SCREENSHOTS)) });
        await desktopScreenshots(ada);

        // A destructive action asks first; cancelled (the button, or Escape), nothing happens.
        await page.click('#act-sessions');
        await page.locator('#confirm').waitFor({ state: 'visible' });
        await assertLabelled(context, page, 'the confirmation');
        assert.ok((await scrollWidth(page)) <= 390, 'the confirmation fits 390 px');
        await page.click('#confirm-cancel');
        await page.locator('#confirm').waitFor({ state: 'hidden' });
        await page.click('#act-sessions');
        await page.locator('#confirm').waitFor({ state: 'visible' });
        await page.keyboard.press('Escape');
        await page.locator('#confirm').waitFor({ state: 'hidden' });
        assert.equal(await sessionAnswers(adaToken), 200, 'still signed in after Cancel and Escape');

        // End all sessions: the other client's session answers 401.
        await page.click('#act-sessions');
        await confirm(page);
        await saysOk(page, /Every session of .* has ended/);
        assert.equal(await message(page).getAttribute('role'), 'status');
        assert.equal(await message(page).getAttribute('aria-live'), 'polite');
        await until(
          async () => (await page.locator('#sessions').innerText()).includes('No sessions'),
          'none left',
        );
        assert.equal(await sessionAnswers(adaToken), 401, 'her session has ended');
        assert.ok(await page.locator('#act-sessions').isDisabled(), 'nothing more to end');

        // Remove the second factors: TOTP off, and the password alone signs her in.
        await page.click('#act-mfa');
        await confirm(page);
        await saysOk(page, /second factors .* are removed/);
        await until(
          async () =>
            /Two-step sign-in \(authenticator app\)\s+Off/.test(await page.locator('#factors').innerText()),
          'TOTP off',
        );
        assert.ok(await page.locator('#act-mfa').isDisabled(), 'nothing more to remove');
        assert.equal((await signinAnswers(ada)).statusCode, 200);

        // Disable, with a reason: her sign-in is refused (403); enable: it works again.
        await page.click('#act-disable');
        await confirm(page, { reason: 'Reported a stolen laptop' });
        await saysOk(page, /is disabled/);
        assert.match(await page.locator('#user-badges').innerText(), /Disabled/);
        assert.match(await page.locator('#details').innerText(), /Reason\s+Reported a stolen laptop/);
        assert.ok(await page.locator('#act-enable').isVisible());
        assert.equal(await page.locator('#act-disable').isVisible(), false);
        const refused = await signinAnswers(ada);
        assert.equal(refused.statusCode, 403, refused.body);
        assert.equal(refused.json().error, 'SIGNIN_FAILED');
        // The status filter finds her among the disabled.
        await searched(
          page,
          () => page.click('#back'),
          (query) => query.get('q') === 'Lovelace',
        );
        await filter(page, 'status', 'disabled');
        assert.equal(await page.locator('#results-status').innerText(), '1 user match.');
        await filter(page, 'status', 'active');
        assert.equal(await page.locator('#results-status').innerText(), 'No users match.');
        await filter(page, 'status', '');
        assert.equal(await page.locator('#results-status').innerText(), '1 user match.');
        await openUser(page, ada.email);
        await page.click('#act-enable');
        await saysOk(page, /is enabled/);
        assert.match(await page.locator('#user-badges').innerText(), /Active/);
        const allowed = await signinAnswers(ada);
        assert.equal(allowed.statusCode, 200, allowed.body);

        // Mails.
        await page.click('#act-reset');
        await saysOk(page, /password-reset mail is on its way/);
        await page.click('#act-verify');
        await saysOk(page, /verification mail is on its way/);

        // Her role: support, asked first.
        await page.selectOption('#role-select', 'support');
        await page.click('#role-submit');
        await confirm(page);
        await saysOk(page, /now has the role Support/);
        const adaAccount = await asUser(t, await sessionOf(ada)).get('/api/account');
        assert.equal(adaAccount.json().role, 'support');

        // The API's own message: the last admin cannot be demoted.
        const own = await asUser(t, adminToken).get(`/api/admin/users/${admin.id}`);
        assert.equal(own.statusCode, 200, own.body);
        assert.equal(own.json().role, 'admin');
        const demote = await t.inject({
          method: 'PATCH',
          url: `/api/admin/users/${admin.id}`,
          headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
          payload: JSON.stringify({ role: 'user' }),
        });
        assert.equal(demote.statusCode, 409, demote.body);
        assert.equal(demote.json().error, 'LAST_ADMIN');
        await page.goto(`${base}/admin#user=${admin.id}`);
        await until(async () => (await page.locator('#user-email').innerText()) === admin.email, 'own view');
        await page.selectOption('#role-select', 'user');
        await page.click('#role-submit');
        await confirm(page);
        await page.waitForSelector('#message.error');
        assert.equal(await message(page).innerText(), demote.json().message);
        assert.equal(await message(page).getAttribute('role'), 'alert');
        assert.equal(await page.locator('#role-select').inputValue(), 'admin', 'the choice is put back');

        assert.deepEqual(problems, [], 'no console errors, page errors or CSP violations');
        assert.deepEqual([...origins], [base], 'every request goes to Usher itself');
      } finally {
        await context.close();
      }
    });

    test('ISSUE 29: an admin invites someone, then deletes an account only once its email is typed', async () => {
      const { context, page, problems, origins } = await openConsole(PHONE, admin);
      try {
        await page.waitForSelector('#search-view', { state: 'visible' });
        await page.click('#nav-invite');
        await page.waitForSelector('#invite-view', { state: 'visible' });
        assert.equal(await focusedId(page), 'invite-email');
        await assertLabelled(context, page, 'invite');
        const invitee = newUser({ name: 'Ivy Invited' });
        await page.fill('#invite-email', invitee.email);
        await page.fill('#invite-name', invitee.name);
        await page.click('#invite-submit');
        await page.waitForSelector('#user-view', { state: 'visible' });
        await until(
          async () => (await page.locator('#user-email').innerText()) === invitee.email,
          'her view',
        );
        await saysOk(page, /is invited/);
        assert.match(await page.locator('#factors').innerText(), /Password\s+None/);
        const id = /#user=(\d+)$/.exec(page.url())?.[1];
        assert.ok(id, 'the address names the new user');
        const seen = await asUser(t, adminToken).get(`/api/admin/users/${id}`);
        assert.equal(seen.statusCode, 200, seen.body);
        assert.equal(seen.json().email, invitee.email);

        // The same email again: the API's message (EMAIL_TAKEN).
        await page.click('#nav-invite');
        await page.fill('#invite-email', invitee.email);
        await page.fill('#invite-name', 'Someone Else');
        await page.click('#invite-submit');
        await page.waitForSelector('#message.error');
        const taken = await t.inject({
          method: 'POST',
          url: '/api/admin/users',
          headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
          payload: JSON.stringify({ email: invitee.email, name: 'Someone Else' }),
        });
        assert.equal(taken.statusCode, 409, taken.body);
        assert.equal(taken.json().error, 'EMAIL_TAKEN');
        assert.equal(await message(page).innerText(), taken.json().message);

        // Delete: the button stays disabled until the email is typed.
        await page.goto(`${base}/admin#user=${id}`);
        await until(
          async () => (await page.locator('#user-email').innerText()) === invitee.email,
          'her view',
        );
        await page.click('#act-delete');
        await page.locator('#confirm').waitFor({ state: 'visible' });
        assert.ok(await page.locator('#confirm-type').isVisible());
        assert.ok(await page.locator('#confirm-ok').isDisabled());
        await page.fill('#confirm-type', 'someone@example.com');
        assert.ok(await page.locator('#confirm-ok').isDisabled());
        await page.press('#confirm-type', 'Enter');
        assert.ok(await page.locator('#confirm').isVisible(), 'Enter with the wrong email deletes nothing');
        await assertLabelled(context, page, 'the delete confirmation');
        await page.fill('#confirm-type', invitee.email.toUpperCase());
        assert.ok(await page.locator('#confirm-ok').isEnabled());
        await page.click('#confirm-ok');
        await page.waitForSelector('#search-view', { state: 'visible' });
        await saysOk(page, /is deleted/);
        assert.equal((await asUser(t, adminToken).get(`/api/admin/users/${id}`)).statusCode, 404);

        assert.deepEqual(problems, [], 'no console errors, page errors or CSP violations');
        assert.deepEqual([...origins], [base], 'every request goes to Usher itself');
      } finally {
        await context.close();
      }
    });

    test('ISSUE 29: a support user reads, ends sessions and sends mails, and is offered nothing else', async () => {
      const support = newUser({ name: 'Sam Support' });
      const supportId = await register(support);
      await setRole(support.email, 'support');
      const bob = newUser({ name: 'Bob Builder' });
      await register(bob);
      const bobToken = await sessionOf(bob);

      const { context, page, problems, origins } = await openConsole(DESKTOP, support);
      try {
        await page.waitForSelector('#search-view', { state: 'visible' });
        assert.equal(await page.locator('#me-role').innerText(), 'Support');
        assert.equal(await page.locator('#nav-invite').isVisible(), false, 'no invitations');
        await search(page, 'Bob Builder');
        await openUser(page, bob.email);
        assert.ok(await page.locator('#actions-hint').isVisible());
        for (const name of [/disable/i, /enable/i, /delete/i, /remove second/i, /change role/i]) {
          assert.equal(await page.getByRole('button', { name }).count(), 0, `no ${name} button`);
        }
        assert.equal(await page.locator('#role-form').isVisible(), false);
        assert.equal(await page.getByRole('combobox', { name: /role in usher/i }).count(), 0);
        await assertLabelled(context, page, "a user's view for support");

        await page.click('#act-reset');
        await saysOk(page, /password-reset mail is on its way/);
        await page.click('#act-sessions');
        await confirm(page);
        await saysOk(page, /Every session of .* has ended/);
        assert.equal(await sessionAnswers(bobToken), 401);

        // #invite in the address: a support user gets the search instead.
        await page.goto(`${base}/admin#invite`);
        await page.waitForSelector('#search-view', { state: 'visible' });
        assert.equal(await page.locator('#invite-view').isVisible(), false);

        // Their own sessions ended elsewhere: the next search asks them to sign in again.
        const ended = await asUser(t, adminToken).delete(`/api/admin/users/${supportId}/sessions`);
        assert.equal(ended.statusCode, 204, ended.body);
        await page.fill('#q', 'Bob');
        await page.press('#q', 'Enter');
        await page.waitForSelector('#signin', { state: 'visible' });
        assert.match(await message(page).innerText(), /Your session has ended/);
        assert.equal(await page.locator('#search-view').isVisible(), false);
        assert.equal(await focusedId(page), 'email');

        assert.deepEqual(problems, [], 'no console errors, page errors or CSP violations');
        assert.deepEqual([...origins], [base], 'every request goes to Usher itself');
      } finally {
        await context.close();
      }
    });

    test('ISSUE 29: a plain user is told the console is not for them, and can sign out', async () => {
      const plain = newUser({ name: 'Pat Plain' });
      await register(plain);
      const { context, page, problems, origins } = await openConsole(PHONE, plain);
      try {
        await page.waitForSelector('#denied', { state: 'visible' });
        assert.match(await page.locator('#denied').innerText(), /cannot use the console/);
        assert.equal(await page.locator('#denied-email').innerText(), plain.email);
        assert.equal(await page.locator('#search-view').isVisible(), false);
        assert.equal(await page.locator('#nav').isVisible(), false);
        await assertLabelled(context, page, 'denied');
        assert.ok((await scrollWidth(page)) <= 390);
        // Another place in the address changes nothing.
        await page.goto(`${base}/admin#search&q=a`);
        await page.goto(`${base}/admin#user=1`);
        assert.ok(await page.locator('#denied').isVisible());
        assert.equal(await page.locator('#search-view').isVisible(), false);
        assert.equal(await page.locator('#user-view').isVisible(), false);
        await page.click('#denied-signout');
        await page.waitForSelector('#signin', { state: 'visible' });
        await saysOk(page, /signed out/);
        const after = await page.evaluate(() => fetch('/api/account').then((r) => r.status));
        assert.equal(after, 401, 'the session has ended');
        assert.deepEqual(problems, [], 'no console errors, page errors or CSP violations');
        assert.deepEqual([...origins], [base], 'every request goes to Usher itself');
      } finally {
        await context.close();
      }
    });

    test('ISSUE 29: an admin with two-step sign-in is asked for the code, then gets the console', async () => {
      const second = newUser({ name: 'Tess Totp' });
      await register(second);
      await setRole(second.email, 'admin');
      const token = await sessionOf(second);
      const setup = await asUser(t, token).post('/api/mfa/totp', { password: second.password });
      assert.equal(setup.statusCode, 200, setup.body);
      const totp = new TOTP({ secret: Secret.fromBase32(setup.json().secret), digits: 6, period: 30 });
      assert.equal(
        (await asUser(t, token).post('/api/mfa/totp/confirm', { code: totp.generate() })).statusCode,
        200,
      );

      const { page, problems, origins } = await openConsole(PHONE, second);
      try {
        await page.waitForSelector('#signin-code-field', { state: 'visible' });
        assert.equal(await focusedId(page), 'signin-code');
        assert.match(await message(page).innerText(), /code from your authenticator app/);
        await page.fill('#signin-code', '000000');
        await page.click('#signin-submit');
        await until(async () => /not right/.test(await message(page).innerText()), 'a wrong code is said so');
        // The code a step on, so it is not the one spent above.
        await page.fill('#signin-code', totp.generate({ timestamp: Date.now() + 30_000 }));
        await page.click('#signin-submit');
        await page.waitForSelector('#search-view', { state: 'visible' });
        assert.equal(await page.locator('#me-email').innerText(), second.email);
        assert.deepEqual(problems, [], 'no console errors, page errors or CSP violations');
        assert.deepEqual([...origins], [base], 'every request goes to Usher itself');
      } finally {
        await page.context().close();
        // One admin again: other tests meet the last-admin rule with theirs.
        await setRole(second.email, 'user');
      }
    });

    test('Enter in the query box searches while an earlier search is still loading (on a slow network too)', async () => {
      const { context, page, problems } = await openConsole(NARROW);
      try {
        // The console's first search (on signing in) is held until the second has been asked for.
        let release: () => void = () => {};
        const held = new Promise<void>((resolve) => {
          release = resolve;
        });
        let first = true;
        await page.route('**/api/admin/users?*', async (route) => {
          if (first) {
            first = false;
            await held;
          }
          await route.continue();
        });
        await page.fill('#email', admin.email);
        await page.fill('#password', admin.password);
        await page.click('#signin-submit');
        await page.waitForSelector('#search-view', { state: 'visible' });
        const asked = page.waitForRequest((request) => {
          const url = new URL(request.url());
          return url.pathname === '/api/admin/users' && url.searchParams.get('q') === 'while loading';
        });
        await page.fill('#q', 'while loading');
        await page.press('#q', 'Enter');
        await asked;
        release();
        await until(
          async () => (await page.locator('#results-status').innerText()).includes('match'),
          'the results drawn',
        );
        assert.deepEqual(problems, []);
      } finally {
        await context.close();
      }
    });

    test('ISSUE 30: the audit log: an admin sees the sign-in and the disabling they just made, newest first, narrows it by type, user and time, pages through it, and a user’s view lists their own records; by keyboard, every control named, 375 px fits', async () => {
      const audrey = newUser({ name: 'Audrey Audit' });
      const audreyId = await register(audrey);
      // Her sign-in, from a client of its own.
      await sessionOf(audrey, 'AuditTestClient/2.0');
      // Enough accounts made for a second page of user.created records, 20 a page.
      for (let i = 1; i <= 21; i++) await register(newUser({ name: `Audit Filler ${i}` }));

      const { context, page, problems, origins } = await openConsole(NARROW, admin);
      try {
        await page.waitForSelector('#search-view', { state: 'visible' });
        await search(page, 'Audrey Audit');
        await openUser(page, audrey.email);
        await page.click('#act-disable');
        await confirm(page, { reason: 'Audit trail check' });
        await saysOk(page, /is disabled/);

        // Her view: her latest records, the disabling (by this admin) among them.
        const activity = page.locator('#activity-body');
        await until(
          async () => /admin\.user\.disabled/.test(await activity.innerText()),
          'the disabling in her activity',
        );
        const recent = await activity.innerText();
        assert.match(recent, /reason="Audit trail check"/);
        assert.match(recent, /session\.ended/, 'her session ended with the disabling');
        assert.match(recent, /signin\.succeeded/);
        assert.match(recent, /AuditTestClient\/2\.0/, 'the sign-in’s client');
        assert.match(recent, /user\.created/);
        const disabledRow = page.locator('#activity-body tr', { hasText: 'admin.user.disabled' }).first();
        assert.equal(await disabledRow.locator('td.actor a').innerText(), String(admin.id), 'by this admin');
        assert.ok((await page.locator('#activity-body tr').count()) <= 10);
        assert.match(await page.locator('#activity-status').innerText(), /newest first/);
        await assertLabelled(context, page, "a user's view with their records");
        assert.deepEqual(await overflowing(page, 375), [], 'her records fit 375 px');

        // Every record about her, in the audit log.
        await audited(
          page,
          () => page.click('#activity-all'),
          (query) => query.get('userId') === String(audreyId),
        );
        assert.equal(await page.locator('#audit-user').inputValue(), String(audreyId));
        const about = await page.locator('#audit-body td.user').allInnerTexts();
        assert.ok(about.length >= 4, `her records: ${about.length}`);
        for (const text of about) assert.match(text, new RegExp(`\\b${audreyId}$`), 'each about her');
        await page.mouse.move(0, 0);
        await page
          .locator('#audit-status')
          .evaluate((e) => (e as unknown as { scrollIntoView(): void }).scrollIntoView());
        mkdirSync(SCREENSHOTS, { recursive: true });
        await page.screenshot({ path: fileURLToPath(new URL('admin-audit.png', SCREENSHOTS)) });

        // The whole log, from the console's link: newest first, her disabling with its actor and details.
        const everything = await audited(
          page,
          () => page.click('#nav-audit'),
          (query) => !query.has('userId') && !query.has('type'),
        );
        assert.equal(await page.locator('#audit-user').inputValue(), '', 'the link shows everything');
        const times = await page
          .locator('#audit-body time')
          .evaluateAll((nodes) => nodes.map((node) => (node as unknown as Control).getAttribute('datetime')));
        assert.ok(times.length > 0);
        assert.deepEqual([...times].sort().reverse(), times, 'newest first');
        const disabling = page.locator('#audit-body tr', { hasText: 'admin.user.disabled' }).first();
        assert.equal(await disabling.locator('td.actor a').innerText(), String(admin.id));
        assert.equal(await disabling.locator('td.user a').innerText(), String(audreyId));
        assert.match(await disabling.locator('td.address').innerText(), /127\.0\.0\.1/);
        assert.match(await disabling.locator('td.record-details').innerText(), /reason="Audit trail check"/);
        assert.equal(await page.locator('#audit-status').getAttribute('aria-live'), 'polite');
        await assertLabelled(context, page, 'the audit log');
        assert.deepEqual(await overflowing(page, 375), [], 'the audit log fits 375 px');

        // The type filter narrows it: a type's first part, then a whole type.
        await page.fill('#audit-type', 'signin');
        const signins = await audited(
          page,
          () => page.press('#audit-type', 'Enter'),
          (query) => query.get('type') === 'signin',
        );
        assert.ok(totalOf(signins) < totalOf(everything), 'fewer records than the whole log');
        const signinTypes = await page.locator('#audit-body td.type').allInnerTexts();
        assert.ok(
          signinTypes.length > 0 && signinTypes.every((type) => type.startsWith('signin.')),
          `sign-ins only: ${signinTypes}`,
        );
        assert.ok(
          (await page.locator('#audit-body tr', { hasText: 'AuditTestClient/2.0' }).count()) >= 1,
          'her sign-in among them',
        );
        assert.match(new URL(page.url()).hash, /^#audit&type=signin$/, 'the filter is in the fragment');
        await page.fill('#audit-type', 'admin.user.disabled');
        await audited(
          page,
          () => page.click('#audit-submit'),
          (query) => query.get('type') === 'admin.user.disabled',
        );
        const disabledTypes = await page.locator('#audit-body td.type').allInnerTexts();
        assert.ok(disabledTypes.length >= 1 && disabledTypes.every((type) => type === 'admin.user.disabled'));
        assert.ok((await page.locator('#audit-body tr', { hasText: 'Audit trail check' }).count()) === 1);

        // Time: nothing before 2000; a type that is none is said so, and nothing is asked.
        await page.fill('#audit-until', '2000-01-01T00:00');
        await audited(
          page,
          () => page.click('#audit-submit'),
          (query) => query.has('until'),
        );
        assert.equal(await page.locator('#audit-status').innerText(), 'No records match.');
        assert.equal(await page.locator('#audit').isVisible(), false);
        await page.fill('#audit-type', 'Not a type!');
        await page.click('#audit-submit');
        await page.waitForSelector('#message.error');
        assert.match(await message(page).innerText(), /^Type: a type like/);
        assert.equal(await page.locator('#audit-type').getAttribute('aria-invalid'), 'true');
        await audited(
          page,
          () => page.click('#audit-clear'),
          (query) => !query.has('type') && !query.has('until'),
        );
        assert.equal(await page.locator('#audit-type').inputValue(), '');
        assert.equal(await page.locator('#audit-until').inputValue(), '');

        // Paging by the Link header: user.created, 20 a page.
        await page.fill('#audit-type', 'user.created');
        const created = await audited(
          page,
          () => page.selectOption('#audit-size', '20'),
          (query) => query.get('type') === 'user.created' && query.get('size') === '20',
        );
        assert.ok(totalOf(created) > 20, `${totalOf(created)} accounts made`);
        assert.equal(await page.locator('#audit-body > tr').count(), 20);
        assert.match(
          await page.locator('#audit-status').innerText(),
          /^[\d,]+ records match; showing 1 to 20\.$/,
        );
        assert.match(await page.locator('#audit-page-text').innerText(), /^Page 1 of \d+$/);
        assert.ok(await page.locator('#audit-prev').isDisabled());
        await audited(
          page,
          () => page.click('#audit-next'),
          (query) => query.get('page') === '2',
        );
        assert.match(await page.locator('#audit-status').innerText(), /showing 21 to/);
        assert.match(await page.locator('#audit-page-text').innerText(), /^Page 2 of \d+$/);
        assert.ok(await page.locator('#audit-prev').isEnabled());
        assert.deepEqual(await overflowing(page, 375), [], 'the pager fits 375 px');
        await audited(
          page,
          () => page.goBack(),
          (query) => (query.get('page') ?? '1') === '1' && query.get('type') === 'user.created',
        );
        assert.match(await page.locator('#audit-page-text').innerText(), /^Page 1 of/);

        // The keyboard: from the top of the search page, Tab reaches the audit log's link; Enter
        // opens it; the next Tab is the type filter, which Enter applies.
        await searched(
          page,
          () => page.click('#nav-search'),
          () => true,
        );
        await page.locator('#heading').click();
        await tabTo(page, 'nav-audit', 10);
        assert.match(await focusOutline(page), /^solid [1-9]/, 'the focused link shows it');
        await page.keyboard.press('Enter');
        await until(async () => (await focusedId(page)) === 'audit-title', 'the log’s heading focused');
        await page.keyboard.press('Tab');
        assert.equal(await focusedId(page), 'audit-type');
        assert.match(await focusOutline(page), /^solid [1-9]/, 'the focused filter shows it');
        await page.keyboard.type('admin.user.disabled');
        await audited(
          page,
          () => page.keyboard.press('Enter'),
          (query) => query.get('type') === 'admin.user.disabled',
        );
        // Each part of the two times (day, month, year, hours, …) is a stop of its own.
        await tabTo(page, 'audit-submit', 25);
        assert.deepEqual([...origins], [base], 'every request goes to Usher itself');
        assert.deepEqual(problems, [], 'no console errors, page errors or CSP violations');
      } finally {
        await context.close();
      }

      // At a desktop's width: her records.
      const desktop = await openConsole(DESKTOP, admin);
      try {
        await desktop.page.waitForSelector('#search-view', { state: 'visible' });
        await audited(
          desktop.page,
          () => desktop.page.goto(`${base}/admin#audit&userId=${audreyId}`),
          (query) => query.get('userId') === String(audreyId),
        );
        await desktop.page.mouse.move(0, 0);
        await desktop.page.screenshot({
          path: fileURLToPath(new URL('admin-audit-desktop.png', SCREENSHOTS)),
          fullPage: true,
        });
        await assertLabelled(desktop.context, desktop.page, 'the audit log, desktop');
        assert.deepEqual(desktop.problems, [], 'no console errors, page errors or CSP violations');
      } finally {
        await desktop.context.close();
      }
    });

    test('ISSUE 30: webhooks: an admin adds one to a local receiver by keyboard, sees its secret once (and copies it), follows its deliveries, retries a pending and a sent one, and deletes it after confirming; every control named, 375 px fits', async () => {
      const receiver = await startReceiver();
      const { context, page, problems, origins } = await openConsole(NARROW, admin);
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
      try {
        await page.waitForSelector('#search-view', { state: 'visible' });
        // The keyboard: Tab reaches the Webhooks link, Enter opens the page.
        await page.locator('#heading').click();
        await tabTo(page, 'nav-webhooks', 10);
        await page.keyboard.press('Enter');
        await page.waitForSelector('#webhooks-view', { state: 'visible' });
        await until(async () => (await focusedId(page)) === 'webhooks-title', 'the heading focused');
        await until(
          async () => (await page.locator('#webhooks').innerText()).includes('No webhooks yet'),
          'none yet',
        );
        assert.equal(await page.locator('#webhooks-denied').isVisible(), false);
        await assertLabelled(context, page, 'the webhooks page');
        assert.deepEqual(await overflowing(page, 375), [], 'the webhooks page fits 375 px');

        // Tab reaches the URL; with no event chosen, the page says so and makes nothing.
        await tabTo(page, 'webhook-url', 5);
        await page.keyboard.type(receiver.url);
        await page.keyboard.press('Enter');
        await page.waitForSelector('#message.error');
        assert.match(await message(page).innerText(), /Choose at least one event/);
        assert.equal(await focusedId(page), 'event-user-created', 'the first event is focused');
        const labels = await page
          .locator('#webhook-events input[type="checkbox"]')
          .evaluateAll((boxes) =>
            boxes.map((box) =>
              Array.from((box as unknown as Control).labels ?? [], (l) => l.textContent).join(),
            ),
          );
        assert.deepEqual(
          labels.map((label) => label?.trim()),
          [
            'user.created',
            'user.updated',
            'user.deleted',
            'user.disabled',
            'user.enabled',
            'user.signed_in',
            'session.ended',
            'password.changed',
            'email.verified',
            'identity.linked',
            'identity.unlinked',
          ],
          'the 11 events, each a labelled checkbox',
        );
        // Space ticks the focused box; Tab goes from one to the next.
        await page.keyboard.press('Space');
        for (let i = 0; i < 3; i++) await page.keyboard.press('Tab');
        assert.equal(await focusedId(page), 'event-user-disabled');
        assert.match(await focusOutline(page), /^solid [1-9]/, 'the focused box shows it');
        await page.keyboard.press('Space');
        assert.ok(await page.locator('#event-user-created').isChecked());
        assert.ok(await page.locator('#event-user-disabled').isChecked());
        await tabTo(page, 'webhook-submit', 12);
        await page.keyboard.press('Enter');

        // The secret: shown once, with the note and a way to copy it.
        await page.waitForSelector('#secret', { state: 'visible' });
        await saysOk(page, /is added/);
        const secret = (await page.locator('#secret-value').innerText()).trim();
        assert.match(secret, /^whsec_[A-Za-z0-9+/=]{44}$/);
        assert.match(await page.locator('#secret').innerText(), /will not be shown again/);
        assert.equal(await focusedId(page), 'secret-title', 'the secret is where the reading starts');
        await page.keyboard.press('Tab');
        assert.equal(await focusedId(page), 'secret-copy');
        await page.keyboard.press('Enter');
        await saysOk(page, /secret is copied/);
        const clipboard = await page.evaluate(() =>
          (
            globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }
          ).navigator.clipboard.readText(),
        );
        assert.equal(clipboard, secret, 'the clipboard holds it');
        await assertLabelled(context, page, 'the new secret');
        assert.deepEqual(await overflowing(page, 375), [], 'the secret fits 375 px');

        // Listed, with its events; the list (on the page and in the API) never holds the secret.
        const listed = page.locator('#webhooks > li.webhook');
        await until(async () => (await listed.count()) === 1, 'listed');
        assert.match(await listed.innerText(), new RegExp(receiver.url.replace(/\./g, '\\.')));
        assert.match(await listed.innerText(), /Events: user\.created, user\.disabled/);
        const api = await asUser(t, adminToken).get('/api/admin/webhooks');
        assert.equal(api.statusCode, 200, api.body);
        assert.ok(!api.body.includes(secret), 'the API lists no secret');
        assert.deepEqual(api.json()[0].events, ['user.created', 'user.disabled']);
        await page.click('#secret-done');
        assert.equal(await page.locator('#secret').isVisible(), false);
        assert.ok(!(await page.content()).includes(secret), 'once dismissed, the secret is off the page');
        assert.equal(await focusedId(page), 'webhook-url');
        await page.mouse.move(0, 0);
        await page.screenshot({
          path: fileURLToPath(new URL('admin-webhooks.png', SCREENSHOTS)),
          fullPage: true,
        });

        // An event: an account made; the receiver is down (503), so the delivery stays pending.
        const nina = newUser({ name: 'Nina Newcomer' });
        const ninaId = await register(nina);
        await until(async () => receiver.received.length >= 1, 'the first attempt');
        await page.getByRole('link', { name: `Deliveries to ${receiver.url}` }).click();
        await page.waitForSelector('#deliveries-view', { state: 'visible' });
        await until(async () => (await focusedId(page)) === 'deliveries-title', 'the heading focused');
        const delivery = page.locator('#deliveries > li.delivery');
        // The attempt is recorded just after the receiver answers: refreshed until it shows.
        await until(async () => {
          await deliveriesDrawn(page, () => page.click('#deliveries-refresh'));
          return /HTTP 503/.test(await delivery.innerText());
        }, 'the refused attempt shown');
        assert.equal(await delivery.count(), 1);
        const pending = await delivery.innerText();
        assert.match(pending, /user\.created/);
        assert.match(pending, /Pending/);
        assert.match(pending, /Last error: /);
        assert.match(pending, new RegExp(`About user ${ninaId}\\b`));
        assert.match(
          await page.locator('#deliveries-url').innerText(),
          new RegExp(receiver.url.replace(/\./g, '\\.')),
        );
        await delivery.locator('summary').click();
        const payload = JSON.parse(await delivery.locator('pre').innerText());
        assert.equal(payload.type, 'user.created');
        assert.equal(String(payload.data.userId), String(ninaId));
        await assertLabelled(context, page, 'the deliveries');
        assert.deepEqual(await overflowing(page, 375), [], 'the deliveries fit 375 px');

        // Retry, with the receiver up again: sent, with the webhook-id of the first attempt.
        receiver.state.up = true;
        const retried = page.waitForResponse(
          (r) => r.url().endsWith('/retry') && r.request().method() === 'POST',
        );
        await delivery.getByRole('button', { name: /^Retry/ }).click();
        assert.equal((await retried).status(), 202);
        await saysOk(page, /queued again/);
        await until(async () => {
          await deliveriesDrawn(page, () => page.click('#deliveries-refresh'));
          return (await delivery.locator('.badge').innerText()) === 'Sent';
        }, 'sent');
        assert.match(await delivery.innerText(), /Delivered /);
        const sent = receiver.received.at(-1)!;
        assert.equal(sent.headers['webhook-id'], receiver.received[0]!.headers['webhook-id']);
        assert.match(String(sent.headers['webhook-signature']), /^v1,/);

        // The status filter.
        await deliveriesDrawn(page, () => page.selectOption('#delivery-status', 'failed'));
        assert.equal(await page.locator('#deliveries-status').innerText(), 'No failed deliveries.');
        await deliveriesDrawn(page, () => page.selectOption('#delivery-status', 'sent'));
        assert.equal(await delivery.count(), 1);
        assert.match(new URL(page.url()).hash, /status=sent/);
        await page.mouse.move(0, 0);
        await page
          .locator('#deliveries-back')
          .evaluate((e) => (e as unknown as { scrollIntoView(): void }).scrollIntoView());
        await page.screenshot({ path: fileURLToPath(new URL('admin-deliveries.png', SCREENSHOTS)) });

        // A sent one may be sent again (a receiver that lost it), with the same webhook-id.
        const before = receiver.received.length;
        const again = page.waitForResponse(
          (r) => r.url().endsWith('/retry') && r.request().method() === 'POST',
        );
        await delivery.getByRole('button', { name: /^Retry/ }).click();
        assert.equal((await again).status(), 202);
        await saysOk(page, /queued again/);
        await until(async () => receiver.received.length > before, 'sent again');
        assert.equal(receiver.received.at(-1)!.headers['webhook-id'], sent.headers['webhook-id']);

        // Delete: asked first; Cancel keeps it, confirmed it goes.
        await page.click('#deliveries-back');
        await page.waitForSelector('#webhooks-view', { state: 'visible' });
        await until(async () => (await listed.count()) === 1, 'listed');
        const remove = page.getByRole('button', { name: `Delete the webhook to ${receiver.url}` });
        await remove.click();
        await page.locator('#confirm').waitFor({ state: 'visible' });
        assert.match(await page.locator('#confirm-text').innerText(), /stops sending events/);
        await assertLabelled(context, page, 'the delete confirmation');
        await page.click('#confirm-cancel');
        await page.locator('#confirm').waitFor({ state: 'hidden' });
        assert.equal((await asUser(t, adminToken).get('/api/admin/webhooks')).json().length, 1);
        await remove.click();
        await confirm(page);
        await saysOk(page, /is deleted/);
        await until(
          async () => (await page.locator('#webhooks').innerText()).includes('No webhooks yet'),
          'none left',
        );
        assert.deepEqual((await asUser(t, adminToken).get('/api/admin/webhooks')).json(), []);

        assert.deepEqual(problems, [], 'no console errors, page errors or CSP violations');
        assert.deepEqual([...origins], [base], 'every request goes to Usher itself');
      } finally {
        await context.close();
        await receiver.close();
      }

      // The desktop's view of the page, with one webhook listed (to a receiver that is not there).
      const shown = await asUser(t, adminToken).post('/api/admin/webhooks', {
        url: 'http://127.0.0.1:9/usher-hook',
        events: ['user.created', 'user.deleted', 'password.changed'],
      });
      assert.equal(shown.statusCode, 201, shown.body);
      const desktop = await openConsole(DESKTOP, admin);
      try {
        await desktop.page.waitForSelector('#search-view', { state: 'visible' });
        await desktop.page.click('#nav-webhooks');
        await until(
          async () => (await desktop.page.locator('#webhooks > li.webhook').count()) === 1,
          'listed',
        );
        await desktop.page.mouse.move(0, 0);
        await desktop.page.screenshot({
          path: fileURLToPath(new URL('admin-webhooks-desktop.png', SCREENSHOTS)),
          fullPage: true,
        });
        await assertLabelled(desktop.context, desktop.page, 'the webhooks page, desktop');
        assert.deepEqual(desktop.problems, [], 'no console errors, page errors or CSP violations');
      } finally {
        await desktop.context.close();
        await asUser(t, adminToken).delete(`/api/admin/webhooks/${shown.json().id}`);
      }
    });

    test('ISSUE 30: a support user reads the audit log, and is offered no webhooks: no link, and "needs an admin" at their address; an admin who loses the role is told so on the next call', async () => {
      const support = newUser({ name: 'Sue Support' });
      await register(support);
      await setRole(support.email, 'support');
      const made = await asUser(t, adminToken).post('/api/admin/webhooks', {
        url: 'http://127.0.0.1:9/usher-hook',
        events: ['user.deleted'],
      });
      assert.equal(made.statusCode, 201, made.body);
      const webhookId = String(made.json().id);

      const { context, page, problems, origins } = await openConsole(DESKTOP, support);
      const webhookCalls: string[] = [];
      page.on('request', (request) => {
        if (new URL(request.url()).pathname.startsWith('/api/admin/webhooks'))
          webhookCalls.push(request.url());
      });
      try {
        await page.waitForSelector('#search-view', { state: 'visible' });
        assert.ok(await page.locator('#nav-audit').isVisible(), 'support may read the audit log');
        assert.equal(await page.locator('#nav-webhooks').isVisible(), false, 'no webhooks link');
        await audited(
          page,
          () => page.click('#nav-audit'),
          () => true,
        );
        assert.ok((await page.locator('#audit-body > tr').count()) > 0, 'records shown');
        await assertLabelled(context, page, 'the audit log for support');

        for (const place of ['#webhooks', `#webhook=${webhookId}`]) {
          await page.goto(`${base}/admin${place}`);
          await page.waitForSelector('#webhooks-view', { state: 'visible' });
          assert.match(await page.locator('#webhooks-denied').innerText(), /Webhooks need an admin/);
          assert.equal(await page.locator('#webhook-form').isVisible(), false);
          assert.equal(await page.locator('#deliveries-view').isVisible(), false);
          for (const name of [/delete/i, /retry/i, /add the webhook/i, /copy/i])
            assert.equal(await page.getByRole('button', { name }).count(), 0, `no ${name} button`);
          assert.equal(await page.getByRole('textbox', { name: /receiver url/i }).count(), 0);
        }
        assert.deepEqual(webhookCalls, [], 'the page asks the API nothing of webhooks for support');
        await assertLabelled(context, page, 'webhooks for support');
        assert.deepEqual(problems, [], 'no console errors, page errors or CSP violations');
        assert.deepEqual([...origins], [base], 'every request goes to Usher itself');
      } finally {
        await context.close();
      }

      // An admin's console open while their role is taken away: the next call's 403 is shown.
      const wendy = newUser({ name: 'Wendy Webhooks' });
      await register(wendy);
      await setRole(wendy.email, 'admin');
      const demoted = await openConsole(DESKTOP, wendy);
      try {
        await demoted.page.waitForSelector('#search-view', { state: 'visible' });
        await demoted.page.click('#nav-webhooks');
        await until(
          async () => (await demoted.page.locator('#webhooks > li.webhook').count()) >= 1,
          'listed',
        );
        await setRole(wendy.email, 'support');
        await audited(
          demoted.page,
          () => demoted.page.click('#nav-audit'),
          () => true,
        );
        await demoted.page.click('#nav-webhooks');
        await demoted.page.waitForSelector('#message.error');
        assert.equal(await message(demoted.page).innerText(), 'This needs an account with the admin role.');
        assert.ok(await demoted.page.locator('#webhooks-denied').isVisible());
        assert.equal(await demoted.page.locator('#webhooks > li').count(), 0, 'nothing of the list stays');
        assert.equal(await demoted.page.locator('#nav-webhooks').isVisible(), false);
        assert.deepEqual(demoted.problems, [], 'no console errors, page errors or CSP violations');
      } finally {
        await demoted.context.close();
        await setRole(wendy.email, 'user');
        await asUser(t, adminToken).delete(`/api/admin/webhooks/${webhookId}`);
      }
    });

    test('ISSUE 29: GET /admin is a page of Usher’s own: its CSP (no framing), no-store, only its own same-origin files, no inline code, no HTML written by its script', async () => {
      const res = await t.get('/admin');
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
      assert.equal(res.headers['content-security-policy'], PAGE_CSP);
      assert.equal(res.headers['referrer-policy'], 'no-referrer');
      assert.equal(res.headers['cache-control'], 'no-store');
      assert.equal(res.headers['x-content-type-options'], 'nosniff');
      const html = res.body;
      const refs = [...html.matchAll(/\b(?:src|href)\s*=\s*["']?([^"'\s>]+)/gi)].map((m) => m[1]!);
      assert.ok(refs.includes('/pages/admin.js') && refs.includes('/pages/admin.css'));
      for (const ref of refs) {
        if (ref.startsWith('#') || ref === '/account') continue;
        assert.ok(ref.startsWith('/pages/'), `${ref} is one of the pages' assets`);
        const asset = await t.get(ref);
        assert.equal(asset.statusCode, 200, `${ref} is served`);
        assert.equal(asset.headers['content-security-policy'], PAGE_CSP, ref);
      }
      assert.doesNotMatch(html, /https?:\/\//);
      assertScriptsAreFiles(html, '/admin');
      assert.doesNotMatch(html, /<style\b/i);
      assert.doesNotMatch(html, /\sstyle\s*=/i);
      assert.doesNotMatch(html, /\son[a-z]+\s*=/i);
      const script = (await t.get('/pages/admin.js')).body;
      assert.doesNotMatch(
        script,
        /innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function/,
      );
      assert.doesNotMatch(script, /https?:\/\//, 'the script names no other origin');
      assert.doesNotMatch((await t.get('/pages/admin.css')).body, /url\(|@import|https?:\/\//);
    });
  });
}
