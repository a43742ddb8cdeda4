// Issue 25, "Mail bombing through email changes": flipping one's own email between a victim's
// address and another 40 times in 10 s sent the victim 40 mails. An email change mails the new
// address a link and the old one a notice; now at most EMAIL_CHANGE_MAX_PER_ACCOUNT changes per
// account and EMAIL_CHANGE_MAX_PER_MAILBOX such mails to one address go out per 15 minutes. A
// change beyond either is refused, 429 TOO_MANY_REQUESTS with Retry-After, and changes nothing:
// every change that is made is announced, so an attacker holding the account cannot make one
// silently by first filling the old address's cap.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import type { Profile } from '../../src/config.ts';
import { asUser, NO_THROTTLE, newUser, register, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { mailsTo, mailTo, SUBJECTS, waitForMails, waitUntil } from '../helpers/mail.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';

const CHANGED_EMAIL = /email address of your account was changed/i;

function assertTooMany(res: LightMyRequestResponse, what: string): number {
  assert.equal(res.statusCode, 429, `${what}: ${res.body}`);
  assert.deepEqual(Object.keys(res.json()).sort(), ['error', 'message'], what);
  assert.equal(res.json().error, 'TOO_MANY_REQUESTS', what);
  assert.match(res.json().message, /^email: /, what);
  const retryAfter = Number(res.headers['retry-after']);
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 900, `${what}: ${retryAfter}`);
  return retryAfter;
}

describeEachStore('email change mail caps', (store) => {
  let smtp: TestSmtp;
  let offset = 0;
  const apps = {} as Record<Profile, TestApp>;
  before(async () => {
    smtp = await startSmtp();
    for (const profile of ['a', 'b'] as const) {
      apps[profile] = await startApp(
        store,
        profile,
        { mail: mailTo(smtp.url) },
        { clock: () => Date.now() + offset },
      );
    }
  });
  after(async () => {
    for (const t of Object.values(apps)) await t.close();
    await smtp.close();
  });

  /** A user of `t`, signed in, and a PUT that sets their email (with the right present password). */
  async function account(t: TestApp) {
    const u = await register(t);
    const me = asUser(t, await signIn(t, u));
    const setEmail = (email: string) =>
      me.put(`/api/users/${u.id}`, { email, name: u.name, currentPassword: u.password });
    return { ...u, setEmail };
  }

  /**
   * Waits until every mail recorded so far went out: a marker mail, recorded after them, has
   * arrived (mail goes out in the order it was recorded).
   */
  async function settled(t: TestApp) {
    const marker = await register(t);
    await waitForMails(smtp, marker.email, SUBJECTS.verify);
  }

  for (const profile of ['a', 'b'] as const) {
    test(`[${profile}] ISSUE 25: flipping one's email between a victim's address and another 40 times mails the victim at most 3 times; the rest are 429 and change nothing`, async () => {
      const t = apps[profile];
      const attacker = await account(t);
      const victim = newUser().email;
      const other = newUser().email;
      const statuses: number[] = [];
      let current = attacker.email;
      let changes = 0;
      for (let i = 0; i < 40; i++) {
        const next = i % 2 === 0 ? victim : other;
        const res = await attacker.setEmail(next);
        statuses.push(res.statusCode);
        if (res.statusCode === 200) {
          // After a refusal the account still has the address it is "changed" to next: no change, no mail.
          if (next !== current) changes += 1;
          current = next;
          assert.equal(res.json().email, next);
          if (profile === 'a') assert.deepEqual(Object.keys(res.json()).sort(), ['email', 'id', 'name']);
          else assert.equal(res.json().emailVerified, false);
        } else {
          assertTooMany(res, `change ${i + 1}`);
        }
      }
      assert.equal(changes, 3, `3 changes made: ${statuses.join(',')}`);
      assert.equal(
        statuses.filter((s) => s === 429).length,
        40 - 3 - 18,
        `every other flip refused: ${statuses.join(',')}`,
      );
      assert.deepEqual(statuses.slice(0, 3), [200, 200, 200], 'the first three');
      // A refused change left the account as it was.
      assert.equal((await t.get(`/api/users/${attacker.id}`)).json().email, current);

      // Messages go out in parallel, so a marker mail may overtake them: wait for the expected
      // ones first, then for the marker, before counting what else arrived.
      await waitForMails(smtp, victim, SUBJECTS.verify, 2);
      await waitForMails(smtp, victim, CHANGED_EMAIL, 1);
      await settled(t);
      const toVictim = mailsTo(smtp, victim);
      assert.ok(toVictim.length <= 3, `the victim got ${toVictim.length} mails`);
      assert.equal(mailsTo(smtp, victim, SUBJECTS.verify).length, 2, 'two links (changes 1 and 3)');
      assert.equal(mailsTo(smtp, victim, CHANGED_EMAIL).length, 1, 'one notice (change 2)');
    });
  }

  test('ISSUE 25: the cap on mails to one address holds across accounts: turns taken by several accounts mail the victim at most 3 times', async () => {
    const t = apps.b;
    const victim = newUser().email;
    const [one, two] = [await account(t), await account(t)];
    assert.equal((await one.setEmail(victim)).statusCode, 200, 'one takes the address: a link to it');
    assert.equal((await one.setEmail(newUser().email)).statusCode, 200, 'one leaves it: a notice to it');
    assert.equal((await two.setEmail(victim)).statusCode, 200, 'two takes it: the third mail');
    // Leaving would send the victim a fourth (the notice): refused, and two keeps the address.
    assertTooMany(await two.setEmail(newUser().email), 'two leaving the address');
    assert.equal((await t.get(`/api/users/${two.id}`)).json().email, victim);
    const three = await account(t);
    assert.equal((await three.setEmail(victim)).statusCode, 409, 'taken: no mail either way');
    // Messages go out in parallel: wait for the three, then for a marker, before counting.
    await waitUntil(() => mailsTo(smtp, victim).length >= 3, 15_000, 'three mails to the victim');
    await settled(t);
    assert.equal(mailsTo(smtp, victim).length, 3);
  });

  test('ISSUE 25: after 15 minutes the account may change its email again, and the mails go out', async () => {
    const t = apps.b;
    const u = await account(t);
    const addresses = Array.from({ length: 4 }, () => newUser().email);
    for (const email of addresses.slice(0, 3)) assert.equal((await u.setEmail(email)).statusCode, 200);
    const retryAfter = assertTooMany(await u.setEmail(addresses[3]!), 'the 4th change');
    offset += retryAfter * 1000;
    try {
      const res = await u.setEmail(addresses[3]!);
      assert.equal(res.statusCode, 200, res.body);
      await waitForMails(smtp, addresses[3]!, SUBJECTS.verify);
      await waitForMails(smtp, addresses[2]!, CHANGED_EMAIL);
    } finally {
      offset = 0;
    }
  });

  test('ISSUE 25: changes that send no mail are not counted: a name, or the letter case of the email', async () => {
    const t = apps.b;
    const u = await register(t);
    const me = asUser(t, await signIn(t, u));
    for (let i = 0; i < 6; i++) {
      const email = i % 2 ? u.email.toUpperCase() : u.email;
      const res = await me.put(`/api/users/${u.id}`, { email, name: `Name ${i}` });
      assert.equal(res.statusCode, 200, res.body);
    }
  });

  test('ISSUE 25: simultaneous changes of one account are counted exactly: of 8 at once to new addresses, 3 are made', async () => {
    // The sign-in throttle's bound on present-password checks at once is lifted: only the cap binds.
    const t = await startApp(store, 'b', { mail: mailTo(smtp.url), throttle: NO_THROTTLE });
    try {
      const u = await account(t);
      const results = await Promise.all(Array.from({ length: 8 }, () => u.setEmail(newUser().email)));
      const statuses = results.map((r) => r.statusCode).sort();
      assert.deepEqual(statuses, [200, 200, 200, 429, 429, 429, 429, 429]);
      for (const r of results) if (r.statusCode === 429) assertTooMany(r, 'beyond 3');
    } finally {
      await t.close();
    }
  });

  test('ISSUE 25: a change refused for another reason (the address is taken) uses up nothing', async () => {
    const t = apps.b;
    const u = await account(t);
    const taken = (await register(t)).email;
    for (let i = 0; i < 5; i++) assert.equal((await u.setEmail(taken)).statusCode, 409);
    for (let i = 0; i < 3; i++)
      assert.equal((await u.setEmail(newUser().email)).statusCode, 200, `change ${i + 1}`);
  });
});
