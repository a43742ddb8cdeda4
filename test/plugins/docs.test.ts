// GET /docs: its headers and files over HTTP, then the page in a real headless Chromium: every
// route from local assets (no CDN), Usher's title, icon and top bar, the document loaded from
// /openapi.json, the operations tag last, and no CSP violation. The browser part is skipped,
// visibly, without Chromium.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startApp, type TestApp } from '../helpers/app.ts';
import { launchChromium, skipWithoutChromium } from '../helpers/browser.ts';
import { type ServerProcess, startServer } from '../helpers/process.ts';
import { describeUnless } from '../helpers/skip.ts';
import { describeEachStore } from '../helpers/stores.ts';

const skip = skipWithoutChromium;
// The committed screenshots in docs/screenshots/ are rewritten only when asked
// (UPDATE_SCREENSHOTS=1 npm test), so a test run leaves the working tree as it was.
const SCREENSHOTS = new URL(
  process.env.UPDATE_SCREENSHOTS === '1' ? '../../docs/screenshots/' : '../../test-results/',
  import.meta.url,
);
const DOCS_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

describeEachStore('GET /docs over HTTP', (store) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(store, 'b');
  });
  after(() => t.close());

  test('ISSUE 15: the page, its script and its theme carry one CSP with no inline script or style', async () => {
    for (const path of [
      '/docs',
      '/docs/static/swagger-initializer.js',
      '/docs/static/theme/usher.css',
      '/docs/static/theme/usher.js',
    ]) {
      const res = await t.get(path);
      assert.equal(res.statusCode, 200, path);
      assert.equal(res.headers['content-security-policy'], DOCS_CSP, path);
      assert.equal(res.headers['x-content-type-options'], 'nosniff', path);
    }
    const elsewhere = await t.get('/docsx');
    assert.equal(elsewhere.headers['content-security-policy'], "default-src 'none'; frame-ancestors 'none'");
  });

  test('ISSUE 15: Usher’s title and icon, and the page is pointed at /openapi.json', async () => {
    const html = (await t.get('/docs')).body;
    assert.match(html, /<title>Usher API reference<\/title>/);
    assert.doesNotMatch(html, /Swagger UI<\/title>|favicon-32x32\.png/);
    const icon = await t.get('/docs/static/theme/icon.svg');
    assert.equal(icon.headers['content-type'], 'image/svg+xml');
    assert.match(icon.body, /<title>Usher<\/title>/);
    const config = await t.get('/docs/config.json');
    assert.equal(config.statusCode, 200);
    assert.deepEqual(config.json(), { url: '/openapi.json' });
    assert.match(
      (await t.get('/docs/static/swagger-initializer.js')).body,
      /configUrl":"\/docs\/config\.json"/,
    );
  });

  test('ISSUE 15: the package’s /docs/json and /docs/yaml send readers to /openapi.json, which writes the largest id exactly', async () => {
    for (const path of ['/docs/json', '/docs/yaml']) {
      const res = await t.get(path);
      assert.equal(res.statusCode, 301, path);
      assert.equal(res.headers.location, '/openapi.json', path);
    }
    assert.match((await t.get('/openapi.json')).body, /"maximum":9223372036854775807\b/);
  });
});

describeEachStore('The docs page’s head and the document’s examples (issue 32)', (store) => {
  let t: TestApp;
  let a: TestApp;
  before(async () => {
    t = await startApp(store, 'b');
    a = await startApp(store, 'a');
  });
  after(async () => {
    await t.close();
    await a.close();
  });

  test('ISSUE 32: the docs page has a viewport, so a phone shows it at its own width', async () => {
    for (const path of ['/docs', '/docs/']) {
      const html = (await t.get(path)).body;
      assert.match(html, /<meta name="viewport" content="width=device-width, initial-scale=1">/, path);
      assert.equal(html.match(/name="viewport"/g)?.length, 1, path);
    }
    // Nothing else is touched: the API's answers are not HTML pages.
    assert.doesNotMatch((await t.get('/openapi.json')).body, /name=\\?"viewport/);
  });

  type Media = {
    schema?: { $ref?: string };
    example?: unknown;
    examples?: Record<string, { value: unknown }>;
  };
  type Doc = {
    paths: Record<
      string,
      Record<
        string,
        {
          requestBody?: { content: Record<string, Media> };
          responses: Record<string, { description?: string; content?: Record<string, Media> }>;
        }
      >
    >;
    components: { schemas: Record<string, { properties: { error: { enum: string[] } } }> };
  };

  /** Each error response's example codes, by "METHOD path status". */
  function exampleCodes(doc: Doc): Map<string, string[]> {
    const found = new Map<string, string[]>();
    for (const [path, methods] of Object.entries(doc.paths))
      for (const [method, operation] of Object.entries(methods))
        for (const [status, response] of Object.entries(operation.responses)) {
          const json = response.content?.['application/json'];
          if (!/Error\d{3}$/.test(json?.schema?.$ref ?? '')) continue;
          const values =
            json?.example !== undefined
              ? [json.example]
              : Object.values(json?.examples ?? {}).map((e) => e.value);
          found.set(
            `${method.toUpperCase()} ${path} ${status}`,
            values.map((v) => (v as { error: string }).error),
          );
        }
    return found;
  }

  test('ISSUE 32: every error response shows its own route’s codes as examples, in the shape of its status', async () => {
    for (const app of [t, a]) {
      const doc = (await app.get('/openapi.json')).json() as Doc;
      const codes = exampleCodes(doc);
      assert.ok(codes.size > 100, `error responses found: ${codes.size}`);
      for (const [where, listed] of codes) {
        assert.ok(listed.length > 0, `${where}: examples`);
        const [method, path, status] = where.split(' ') as [string, string, string];
        const response = doc.paths[path]![method.toLowerCase()]!.responses[status]!;
        const named = [...(response.description ?? '').matchAll(/(?:^|\n\n)`([A-Z_]+)`:/g)].map((m) => m[1]);
        assert.deepEqual(listed, named, `${where}: the codes the route lists, no other`);
        const ref = response.content!['application/json']!.schema!.$ref!.split('/').at(-1)!;
        for (const code of listed)
          assert.ok(
            doc.components.schemas[ref]!.properties.error.enum.includes(code),
            `${where}: ${code} in ${ref}`,
          );
      }
      // The issue's case: who-am-I without a session is UNAUTHENTICATED, not a failed sign-in.
      assert.deepEqual(codes.get('GET /api/session 401'), ['UNAUTHENTICATED']);
      assert.deepEqual(codes.get('POST /api/signin 401'), ['SIGNIN_FAILED']);
      assert.deepEqual(codes.get('GET /api/users/{id} 404'), ['USER_NOT_FOUND']);
    }
    const b = (await t.get('/openapi.json')).json() as Doc;
    const body = b.paths['/api/session']!.get!.responses['401']!.content!['application/json']!;
    assert.deepEqual(Object.keys(body.example as object).sort(), ['error', 'message']);
    const codeOnly = (await a.get('/openapi.json')).json() as Doc;
    assert.deepEqual(
      codeOnly.paths['/api/users/{id}']!.get!.responses['404']!.content!['application/json']!.example,
      { error: 'USER_NOT_FOUND' },
    );
  });

  test('ISSUE 32: no request body is shown as a placeholder: the open sign-in bodies carry examples of their fields', async () => {
    for (const app of [t, a]) {
      const text = (await app.get('/openapi.json')).body;
      const doc = JSON.parse(text) as Doc;
      const signin = doc.paths['/api/signin']!.post!.requestBody!.content['application/json']!;
      assert.deepEqual(signin.example, {
        email: 'ada@example.com',
        password: 'correct horse battery staple',
        code: '123456',
      });
      for (const [path, methods] of Object.entries(doc.paths))
        for (const [method, operation] of Object.entries(methods)) {
          const json = operation.requestBody?.content['application/json'];
          if (!json) continue;
          assert.doesNotMatch(JSON.stringify(json.example ?? {}), /additionalProp/, `${method} ${path}`);
          const open = JSON.stringify(json.schema).includes('"additionalProperties":true');
          if (open) assert.ok(json.example !== undefined, `${method} ${path}: an open body has an example`);
        }
    }
  });
});

describeUnless(skip, 'GET /docs in headless Chromium', () => {
  let server: ServerProcess;
  before(async () => {
    server = await startServer({ DATABASE_URL: 'sqlite::memory:', PROFILE: 'b' });
  });
  after(() => server?.stop());

  test('ISSUE 7 + 15: every route from local assets, Usher’s top bar, the document from /openapi.json, operations last, no CSP violation', async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 1600 } });
      const outside: string[] = [];
      const fetched: string[] = [];
      page.on('request', (request) => {
        const url = new URL(request.url());
        if (url.protocol.startsWith('http') && url.host !== new URL(server.url).host)
          outside.push(request.url());
        else if (url.protocol.startsWith('http')) fetched.push(url.pathname);
      });
      const problems: string[] = [];
      page.on('console', (message) => {
        if (message.type() === 'error' || message.type() === 'warning')
          problems.push(`console ${message.type()}: ${message.text()}`);
      });
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      await page.addInitScript({
        content: `document.addEventListener('securitypolicyviolation', (event) =>
          console.error('CSP violation: ' + event.violatedDirective + ' ' + event.blockedURI));`,
      });
      await page.goto(`${server.url}/docs`, { waitUntil: 'networkidle' });
      await page.waitForSelector('.opblock', { timeout: 15_000 });
      const paths = await page.$$eval('.opblock-summary-path', (nodes) =>
        nodes.map((n) => n.getAttribute('data-path')),
      );
      for (const path of [
        '/api/users/{id}',
        '/api/users',
        '/api/signin',
        '/api/sessions',
        '/rest',
        '/api/products/{id}/reviews',
      ]) {
        assert.ok(paths.includes(path), `${path} is listed (got ${paths.join(', ')})`);
      }

      assert.equal(await page.title(), 'Usher API reference');
      assert.ok(fetched.includes('/openapi.json'), 'the page loads /openapi.json');
      assert.ok(!fetched.includes('/docs/json'), 'and not the package’s /docs/json');
      assert.equal(await page.inputValue('.topbar .download-url-input'), '/openapi.json');
      // The document names PUBLIC_URL (http://localhost:…) and the page was opened at 127.0.0.1:
      // "Try it out" goes to the page's own server, the one its CSP lets it call.
      const servers = await page
        .locator('.servers select option')
        .evaluateAll((nodes) => nodes.map((n) => n.getAttribute('value')));
      assert.deepEqual(servers, [server.url]);
      const logo = page.locator('.topbar a.link img');
      assert.match((await logo.getAttribute('src')) ?? '', /^data:image\/svg\+xml;base64,/);
      assert.equal(
        await page.locator('.topbar a.link svg').count(),
        0,
        'no Swagger logo left in the top bar',
      );

      // The tags in the document's order: operations (probes, metrics) is the last section.
      const tags = await page.$$eval('.opblock-tag', (nodes) => nodes.map((n) => n.getAttribute('data-tag')));
      assert.equal(tags.at(-1), 'operations', `tags: ${tags.join(', ')}`);
      assert.equal(tags[0], 'users');
      const last = await page
        .locator('.opblock-tag-section')
        .last()
        .locator('.opblock-summary-path')
        .evaluateAll((nodes) => nodes.map((n) => n.getAttribute('data-path')));
      assert.deepEqual([...last].sort(), ['/healthz', '/metrics', '/readyz']);

      assert.deepEqual(outside, [], 'every asset comes from Usher itself');
      assert.deepEqual(problems, []);
      mkdirSync(SCREENSHOTS, { recursive: true });
      await page.screenshot({ path: fileURLToPath(new URL('api-docs.png', SCREENSHOTS)), fullPage: false });
    } finally {
      await browser.close();
    }
  });

  test('ISSUE 32: at phone width (390 px) the page is laid out for the phone: nothing wider than the screen, the examples readable', async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage({
        viewport: { width: 390, height: 844 },
        deviceScaleFactor: 2,
        isMobile: true,
        hasTouch: true,
      });
      await page.goto(`${server.url}/docs`, { waitUntil: 'networkidle' });
      await page.waitForSelector('.opblock', { timeout: 15_000 });
      const block = page
        .locator('.opblock.opblock-get')
        .filter({ has: page.locator('.opblock-summary-path[data-path="/api/session"]') });
      await block.locator('.opblock-summary').first().click();
      const example = block
        .locator('tr[data-code="401"] .example.microlight, tr[data-code="401"] pre')
        .first();
      await example.waitFor();
      assert.match(await example.innerText(), /UNAUTHENTICATED/);
      assert.doesNotMatch(await block.locator('tr[data-code="401"]').innerText(), /SIGNIN_FAILED/);
      const widths = await page.evaluate(
        '({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth, inner: window.innerWidth })',
      );
      const { scroll, client, inner } = widths as { scroll: number; client: number; inner: number };
      // Without a viewport a phone lays the page out 980 px wide and shrinks it.
      assert.equal(inner, 390, 'the layout viewport is the phone’s width');
      assert.ok(scroll <= client, `no sideways scrolling: ${scroll} > ${client}`);
      mkdirSync(SCREENSHOTS, { recursive: true });
      await page.screenshot({ path: fileURLToPath(new URL('api-docs-phone.png', SCREENSHOTS)) });
    } finally {
      await browser.close();
    }
  });
});
