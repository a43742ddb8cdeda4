// The example app (examples/spa: a Vite page using @usher/client) as a team would run it: copied
// out of the repository, `npm install` with the packed client, `npm run build` (tsc, then vite
// build) with VITE_USHER_URL pointing at a listening Usher, the built files served from another
// origin of the same site, and Usher allowing that origin with CORS_ORIGINS. Chromium signs up,
// sees the user shown, keeps the session over a reload, signs out, and signs in with the form.
// Skipped, visibly, without Chromium.
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { extname, join, normalize } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { installPacked, NPM_ENV, packClient, succeeded } from '../clients/pack.ts';
import { newUser } from '../helpers/app.ts';
import { launchChromium, skipWithoutChromium } from '../helpers/browser.ts';
import { freePort, runProcess, type ServerProcess, startServer } from '../helpers/process.ts';
import { describeEachStore } from '../helpers/stores.ts';

const EXAMPLE = fileURLToPath(new URL('../../examples/spa/', import.meta.url));
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** The built app's files, as any static host serves them (the page at /). */
async function serveStatic(root: string): Promise<{ server: Server; origin: string }> {
  const server = createServer((request, response) => {
    const path = normalize(new URL(request.url ?? '/', 'http://app.invalid').pathname);
    const file = join(root, path === '/' ? 'index.html' : path);
    try {
      if (!file.startsWith(root)) throw new Error('outside the app');
      const body = readFileSync(file);
      response.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' });
      response.end(body);
    } catch {
      response.writeHead(404).end();
    }
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe('the example app (examples/spa) in Chromium', { skip: skipWithoutChromium }, () => {
  const temp = mkdtempSync(join(tmpdir(), 'usher-spa-'));
  const project = join(temp, 'spa');
  let browser: Browser;

  before(async () => {
    const { tarball } = await packClient(temp);
    // The example as a project of its own, without what a local run may have left in it.
    cpSync(EXAMPLE, project, {
      recursive: true,
      filter: (source) => !/[/\\](node_modules|dist)$/.test(source),
    });
    await installPacked(project, tarball);
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    rmSync(temp, { recursive: true, force: true });
  });

  describeEachStore('sign-up and sign-in from another origin', (store) => {
    let usher: ServerProcess;
    let app: { server: Server; origin: string };

    before(async () => {
      const port = await freePort();
      const build = await runProcess(
        'npm',
        ['run', 'build'],
        { ...NPM_ENV, VITE_USHER_URL: `http://127.0.0.1:${port}` },
        '',
        project,
      );
      succeeded(build, 'npm run build (tsc && vite build)');
      app = await serveStatic(join(project, 'dist'));
      usher = await startServer({ DATABASE_URL: store.url, PORT: String(port), CORS_ORIGINS: app.origin });
    });
    after(async () => {
      await usher?.stop();
      app?.server.close();
    });

    test('signs up and shows the user, keeps the session over a reload, signs out and in again', async () => {
      const user = newUser();
      const context = await browser.newContext();
      const page = await context.newPage();
      const problems: string[] = [];
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      page.on('console', (message) => {
        // whoAmI without a session, and the wrong password, are 401s: Chromium logs them as failed loads.
        if (message.type() === 'error' && !/401 \(Unauthorized\)/.test(message.text())) {
          problems.push(message.text());
        }
      });
      try {
        await page.goto(app.origin);
        const status = page.locator('#status');
        await status.filter({ hasText: 'Not signed in.' }).waitFor();

        await page.fill('#sign-up [name=name]', user.name);
        await page.fill('#sign-up [name=email]', user.email);
        await page.fill('#sign-up [name=password]', user.password);
        await page.click('#sign-up button');
        await status.filter({ hasText: `Signed in as ${user.name}.` }).waitFor();
        assert.equal(await page.textContent('#user-email'), user.email);
        assert.equal(await page.isVisible('#sign-up'), false);

        // The session is Usher's HttpOnly cookie, on Usher's origin: the page holds nothing.
        const cookie = (await context.cookies(usher.url)).find((c) => c.name === 'usher_session');
        assert.ok(cookie?.httpOnly, 'the session is an HttpOnly cookie of Usher');
        assert.equal(await page.evaluate('document.cookie'), '');

        await page.reload();
        await status.filter({ hasText: `Signed in as ${user.name}.` }).waitFor();

        await page.click('#sign-out');
        await status.filter({ hasText: 'Not signed in.' }).waitFor();
        await page.reload();
        await status.filter({ hasText: 'Not signed in.' }).waitFor();

        await page.fill('#sign-in [name=email]', user.email);
        await page.fill('#sign-in [name=password]', 'not-the-password');
        await page.click('#sign-in button');
        await status.filter({ hasText: 'Wrong email or password.' }).waitFor();
        await page.fill('#sign-in [name=password]', user.password);
        await page.click('#sign-in button');
        await status.filter({ hasText: `Signed in as ${user.name}.` }).waitFor();

        assert.deepEqual(problems, []);
      } finally {
        await context.close();
      }
    });
  });
});
