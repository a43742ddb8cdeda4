// What the mail tests share: the mail settings of an app that sends to a test SMTP server, the
// mails one address received, metrics read from GET /metrics, and waiting for a condition.
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { type Config, loadConfig, type Profile } from '../../src/config.ts';
import { startApp, type TestApp } from './app.ts';
import { type ReceivedMail, startSmtp, type TestSmtp } from './smtp.ts';
import type { Store } from './stores.ts';

/** Mail settings sending to `smtpUrl`, looking for work every 100 ms. */
export function mailTo(smtpUrl: string | undefined, extra: Partial<Config['mail']> = {}): Config['mail'] {
  return { ...loadConfig({}).mail, smtpUrl, pollMs: 100, ...extra };
}

export const SUBJECTS = {
  verify: /confirm your email/i,
  reset: /reset your password/i,
  changed: /password was changed/i,
} as const;

/** The mails `smtp` received for `email` whose subject matches `subject`, in arrival order. */
export function mailsTo(smtp: TestSmtp, email: string, subject?: RegExp): ReceivedMail[] {
  return smtp.messages.filter(
    (m) => m.to.toLowerCase() === email.toLowerCase() && (subject === undefined || subject.test(m.subject)),
  );
}

/** Waits until `email` has received `count` mails matching `subject`; returns them. */
export async function waitForMails(
  smtp: TestSmtp,
  email: string,
  subject: RegExp,
  count = 1,
  timeoutMs = 15_000,
): Promise<ReceivedMail[]> {
  await waitUntil(
    () => mailsTo(smtp, email, subject).length >= count,
    timeoutMs,
    `${count} mail(s) matching ${subject} for ${email}`,
  );
  return mailsTo(smtp, email, subject);
}

export async function waitUntil(
  condition: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) assert.fail(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A sample's value in the Prometheus text of GET /metrics (0 when the series is absent). */
export function metricIn(text: string, name: string, labels = ''): number {
  const series = labels === '' ? name : `${name}{${labels}}`;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  }
  return 0;
}

export async function metric(t: TestApp, name: string, labels = ''): Promise<number> {
  const res = await t.get('/metrics');
  assert.equal(res.statusCode, 200);
  return metricIn(res.body, name, labels);
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * A test SMTP server and a profile A and a profile B app on `store` mailing to it, started in the
 * enclosing suite's `before` and closed in its `after`; the fields are set once `before` ran.
 */
export function mailingApps(
  store: Store,
  publicUrl: string,
): { apps: Record<Profile, TestApp>; smtp: TestSmtp } {
  const suite = { apps: {} as Record<Profile, TestApp>, smtp: undefined as unknown as TestSmtp };
  before(async () => {
    suite.smtp = await startSmtp();
    for (const profile of ['a', 'b'] as const) {
      suite.apps[profile] = await startApp(store, profile, { publicUrl, mail: mailTo(suite.smtp.url) });
    }
  });
  after(async () => {
    for (const profile of ['a', 'b'] as const) await suite.apps[profile]?.close();
    await suite.smtp?.close();
  });
  return suite;
}
