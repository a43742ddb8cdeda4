// GET /docs in a real headless Chromium: the page renders every route from local assets (no CDN),
// and a screenshot is saved to test-results/api-docs.png. Skipped, visibly, without Chromium.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { launchChromium, skipWithoutChromium } from '../helpers/browser.ts';
import { type ServerProcess, startServer } from '../helpers/process.ts';

const skip = skipWithoutChromium;
const SCREENSHOT = fileURLToPath(new URL('../../test-results/api-docs.png', import.meta.url));

describe('GET /docs in headless Chromium', { skip }, () => {
  let server: ServerProcess;
  before(async () => {
    server = await startServer({ DATABASE_URL: 'sqlite::memory:', PROFILE: 'b' });
  });
  after(() => server?.stop());

  test('ISSUE 7: the API reference renders every route from local assets, with no outside request', async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 1600 } });
      const outside: string[] = [];
      page.on('request', (request) => {
        const url = new URL(request.url());
        if (url.protocol.startsWith('http') && url.host !== new URL(server.url).host)
          outside.push(request.url());
      });
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(`${server.url}/docs`, { waitUntil: 'networkidle' });
      await page.waitForSelector('.opblock', { timeout: 15_000 });
      const paths = await page.$$eval('.opblock-summary-path', (nodes) =>
        nodes.map((n) => n.textContent?.replace(/\u200b/g, '')),
      );
      for (const path of [
        '/api/users/{id}',
        '/api/users',
        '/api/signin',
        '/rest',
        '/api/products/{id}/reviews',
      ]) {
        assert.ok(paths.includes(path), `${path} is listed (got ${paths.join(', ')})`);
      }
      assert.deepEqual(outside, [], 'every asset comes from Usher itself');
      assert.deepEqual(errors, []);
      mkdirSync(new URL('../../test-results/', import.meta.url), { recursive: true });
      await page.screenshot({ path: SCREENSHOT, fullPage: false });
      assert.ok(existsSync(SCREENSHOT));
    } finally {
      await browser.close();
    }
  });
});
