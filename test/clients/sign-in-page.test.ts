// The README's sign-in page (clients/typescript/examples/sign-in-page.ts) in a real headless
// Chromium against a listening Usher (profile B): the client's cookie mode as a browser runs it.
// The page, the client and openapi-fetch are served at Usher's origin by the test (Playwright
// routes), the TypeScript stripped of its types by Node; the API calls go to Usher itself.
// Skipped, visibly, without Chromium.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page, Route } from 'playwright-core';
import { newUser, startApp, type TestApp } from '../helpers/app.ts';
import { launchChromium, skipWithoutChromium } from '../helpers/browser.ts';
import { describeEachStore } from '../helpers/stores.ts';

const CLIENT = new URL('../../clients/typescript/', import.meta.url);
const EXAMPLE = new URL('examples/sign-in-page.ts', CLIENT);
const OPENAPI_FETCH = new URL('../../node_modules/openapi-fetch/dist/index.mjs', import.meta.url);

/** The page around the example: its HTML (as the example's comment shows it) and an import map. */
function pageHtml(): string {
  const source = readFileSync(EXAMPLE, 'utf8');
  const markup = source
    .split('\n')
    .filter((line) => line.startsWith('//   '))
    .map((line) => line.slice(5))
    .join('\n');
  const imports = {
    '@usher/client': '/demo/client/src/index.ts',
    'openapi-fetch': '/demo/openapi-fetch.mjs',
  };
  return `<!doctype html><html><head><meta charset="utf-8"><title>Sign in</title>
<script type="importmap">${JSON.stringify({ imports })}</script>
<script type="module" src="/demo/sign-in-page.ts"></script></head><body>${markup}</body></html>`;
}

function javascript(route: Route, source: string) {
  return route.fulfill({ status: 200, contentType: 'text/javascript; charset=utf-8', body: source });
}

/** Serves /demo/ at Usher's origin: the page, the example and the client as JavaScript. */
async function serveDemo(page: Page, base: string): Promise<void> {
  await page.route(`${base}/demo/**`, async (route) => {
    const path = new URL(route.request().url()).pathname;
    if (path === '/demo/') {
      return route.fulfill({ status: 200, contentType: 'text/html; charset=utf-8', body: pageHtml() });
    }
    if (path === '/demo/openapi-fetch.mjs') return javascript(route, readFileSync(OPENAPI_FETCH, 'utf8'));
    if (path === '/demo/sign-in-page.ts') {
      return javascript(route, stripTypeScriptTypes(readFileSync(EXAMPLE, 'utf8')));
    }
    const file = /^\/demo\/client\/(src\/[\w/-]+\.ts)$/.exec(path)?.[1];
    if (file) return javascript(route, stripTypeScriptTypes(readFileSync(new URL(file, CLIENT), 'utf8')));
    return route.fulfill({ status: 404, body: 'not part of the demo' });
  });
}

test("the client's README shows its examples as they are (the type check compiles them)", () => {
  const readme = readFileSync(new URL('README.md', CLIENT), 'utf8');
  for (const example of [EXAMPLE, new URL('examples/calls.ts', CLIENT)]) {
    const source = readFileSync(example, 'utf8');
    assert.ok(
      readme.includes(`\`\`\`ts\n${source}\`\`\``),
      `README.md does not show ${example.pathname} as it is`,
    );
  }
});

test("the project's README shows the sign-in page as it is", () => {
  const readme = readFileSync(new URL('../../docs/guides/single-page-app.md', CLIENT), 'utf8');
  assert.ok(
    readme.includes(`\`\`\`ts\n${readFileSync(EXAMPLE, 'utf8')}\`\`\``),
    'docs/guides/single-page-app.md, "TypeScript client"',
  );
});

describe('The README sign-in page in Chromium', { skip: skipWithoutChromium }, () => {
  describeEachStore('sign-in page with @usher/client', (store) => {
    let browser: Browser;
    let t: TestApp;
    let base = '';

    before(async () => {
      t = await startApp(store, 'b');
      await t.app.listen({ host: '127.0.0.1', port: 0 });
      base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
      browser = await launchChromium();
    });
    after(async () => {
      await browser?.close();
      await t?.close();
    });

    test('signs in with the form, keeps the session over a reload, and signs out', async () => {
      const user = newUser();
      const registered = await t.post('/api/users', user);
      assert.equal(registered.statusCode, 201, registered.body);

      const context = await browser.newContext();
      const page = await context.newPage();
      const problems: string[] = [];
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      page.on('console', (message) => {
        // The whoAmI calls without a session are 401s, which Chromium logs as failed loads.
        if (message.type() === 'error' && !/401 \(Unauthorized\)/.test(message.text())) {
          problems.push(message.text());
        }
      });
      try {
        await serveDemo(page, base);
        await page.goto(`${base}/demo/`);
        const status = page.locator('#status');
        await status.filter({ hasText: 'Not signed in.' }).waitFor();

        await page.fill('[name=email]', user.email);
        await page.fill('[name=password]', 'not-the-password');
        await page.click('#sign-in button');
        await status.filter({ hasText: 'Wrong email or password.' }).waitFor();

        await page.fill('[name=password]', user.password);
        await page.click('#sign-in button');
        await status.filter({ hasText: `Signed in as ${user.name}.` }).waitFor();
        const cookie = (await context.cookies(base)).find((c) => c.name === 'usher_session');
        assert.ok(cookie?.httpOnly, 'the session is an HttpOnly cookie the page cannot read');
        assert.equal(await page.evaluate('document.cookie'), '');

        await page.reload();
        await status.filter({ hasText: `Signed in as ${user.name}.` }).waitFor();

        await page.click('#sign-out');
        await status.filter({ hasText: 'Not signed in.' }).waitFor();
        assert.equal((await context.cookies(base)).filter((c) => c.name === 'usher_session').length, 0);
        assert.deepEqual(problems, []);
      } finally {
        await context.close();
      }
    });
  });
});
