// Pre-account hijacking through a provider that does not verify emails (issue 40, finding 3;
// decisions 195, 340): an attacker signs in at the provider with the victim's address, unverified,
// and the account is made with that identity unproven; the victim, told the address is taken,
// proves the mailbox. Every way of proving it (the verification link, a sign-in by mail link or
// code, a password reset, an accepted invitation, an admin's or the CLI's say-so) must unlink the
// identity, mail the owner a notice and record identity.unlinked: the attacker's next sign-in at
// the provider is then a new identity for a verified account, ACCOUNT_EXISTS, no session. Each
// test drives the real provider (panva's oidc-provider on loopback) and Usher over HTTP.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import type { Profile } from '../../src/config.ts';
import { openDatabase } from '../../src/db/database.ts';
import { compose } from '../../src/features.ts';
import { as, type SignedIn, staff } from '../admin/support.ts';
import { onlyRecord } from '../audit/support.ts';
import { sessionToken, testConfig } from '../helpers/app.ts';
import { openTestDatabase } from '../helpers/db.ts';
import { mailsTo, mailTo, SUBJECTS, waitForMails } from '../helpers/mail.ts';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.ts';
import { linkToken, startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';
import {
  account,
  assertRefused,
  Browser,
  listeningUsher,
  oauthSettings,
  PROFILES,
  PROVIDER,
  PROVIDER_NAME,
  providerPerson,
  type Usher,
} from './support.ts';

const UNLINKED = /unlinked/i;

describeEachStore(
  'Pre-account hijacking: every proof of the mailbox unlinks unproven identities',
  (store) => {
    let provider: TestOidcProvider;
    let smtp: TestSmtp;
    const apps = {} as Record<Profile, Usher>;
    let admin: SignedIn;
    before(async () => {
      provider = await startOidcProvider();
      smtp = await startSmtp();
      const mail = mailTo(smtp.url);
      for (const profile of PROFILES)
        apps[profile] = await listeningUsher(store, profile, provider, { overrides: { mail } });
      admin = await staff(apps.b.t, store, 'admin');
    });
    after(async () => {
      for (const u of Object.values(apps)) await u?.t.close();
      await provider?.close();
      await smtp?.close();
    });

    /** Reads the database the apps share. */
    async function read<T>(query: (db: ReturnType<typeof openTestDatabase>['db']) => Promise<T>): Promise<T> {
      const database = openTestDatabase(store);
      try {
        return await query(database.db);
      } finally {
        await database.close();
      }
    }
    const identitiesOf = (userId: bigint) =>
      read(async (db) =>
        (await sql<{ id: string }>`select id from identities where user_id = ${userId}`.execute(db)).rows.map(
          (r) => r.id,
        ),
      );

    /**
     * The attacker's move: a sign-in at the provider with the victim's address, which the provider
     * did not verify. Usher makes the account (no session: the mailbox is not proven) with the
     * identity unproven, and mails the address a verification link.
     */
    async function preAccount(usher: Usher) {
      const attacker = providerPerson(provider, { email_verified: false, name: 'Mallory Provider' });
      await assertRefused(
        usher,
        await new Browser().flow(usher, provider, { login: attacker.login }),
        'SIGNIN_FAILED',
      );
      const email = attacker.email!;
      const userId = await read(async (db) => {
        const row = await sql<{
          id: bigint | string | number;
        }>`select id from users where email = ${email}`.execute(db);
        assert.equal(row.rows.length, 1, 'the account is made');
        return BigInt(row.rows[0]!.id);
      });
      assert.equal((await identitiesOf(userId)).length, 1, 'with the attacker’s identity');
      return { attacker, email, userId };
    }

    /** After the victim proved the mailbox: the identity is gone, the owner told, the audit says so. */
    async function assertTakenBack(
      usher: Usher,
      pre: Awaited<ReturnType<typeof preAccount>>,
      reason: string,
    ): Promise<void> {
      assert.deepEqual(await identitiesOf(pre.userId), [], 'the unproven identity is unlinked');
      // Its next sign-in is a new identity whose email a verified account holds: ACCOUNT_EXISTS.
      await assertRefused(
        usher,
        await new Browser().flow(usher, provider, { login: pre.attacker.login }),
        'ACCOUNT_EXISTS',
      );
      const [notice] = await waitForMails(smtp, pre.email, UNLINKED);
      assert.ok(notice!.text.includes(PROVIDER_NAME), `the notice names the provider: ${notice!.text}`);
      assert.ok(
        !notice!.text.includes('Mallory'),
        'the notice does not greet by the name the attacker chose',
      );
      const record = await onlyRecord(apps.b.t, admin.token, pre.userId, 'identity.unlinked');
      assert.equal(record.details.provider, PROVIDER);
      assert.equal(record.details.reason, reason);
      assert.equal(mailsTo(smtp, pre.email, UNLINKED).length, 1, 'one notice');
    }

    test('the verification link mailed at the account’s making', async () => {
      const usher = apps.b;
      const pre = await preAccount(usher);
      const [mail] = await waitForMails(smtp, pre.email, SUBJECTS.verify);
      const res = await usher.t.post('/api/email/verify', { token: linkToken(mail!, '/verify-email') });
      assert.equal(res.statusCode, 204, res.body);
      await assertTakenBack(usher, pre, 'email_verification');
    });

    for (const profile of PROFILES) {
      test(`[${profile}] a sign-in by mail link`, async () => {
        const usher = apps[profile];
        const pre = await preAccount(usher);
        const asked = await usher.t.post('/api/signin/email-link', { email: pre.email });
        assert.equal(asked.statusCode, 202, asked.body);
        const [mail] = await waitForMails(smtp, pre.email, /sign-in link/i);
        const res = await usher.t.post('/api/signin/email-link/verify', {
          token: linkToken(mail!, '/signin/email-link'),
        });
        assert.equal(res.statusCode, 200, res.body);
        const session = sessionToken(res.headers['set-cookie']);
        assert.ok(session);
        assert.deepEqual((await account(usher.t, session)).identities, [], 'the victim’s account page');
        await assertTakenBack(usher, pre, 'email_link');
      });

      test(`[${profile}] a sign-in by mail code`, async () => {
        const usher = apps[profile];
        const pre = await preAccount(usher);
        assert.equal((await usher.t.post('/api/signin/email-code', { email: pre.email })).statusCode, 202);
        const [mail] = await waitForMails(smtp, pre.email, /sign-in code/i);
        const code = /\b(\d{6})\b/.exec(mail!.subject)![1]!;
        const res = await usher.t.post('/api/signin/email-code/verify', { email: pre.email, code });
        assert.equal(res.statusCode, 200, res.body);
        assert.ok(sessionToken(res.headers['set-cookie']));
        await assertTakenBack(usher, pre, 'email_code');
      });
    }

    test('a password reset', async () => {
      const usher = apps.b;
      const pre = await preAccount(usher);
      assert.equal((await usher.t.post('/api/password/forgot', { email: pre.email })).statusCode, 202);
      const [mail] = await waitForMails(smtp, pre.email, SUBJECTS.reset);
      const res = await usher.t.post('/api/password/reset', {
        token: linkToken(mail!, '/reset-password'),
        password: 'the victim’s own passphrase',
      });
      assert.equal(res.statusCode, 204, res.body);
      await assertTakenBack(usher, pre, 'password_reset');
    });

    test('an invitation: it cannot be made for the taken address; the link support sends instead is accepted on the reset page', async () => {
      const usher = apps.b;
      const pre = await preAccount(usher);
      const invited = await as(usher.t, admin.token).post('/api/admin/users', {
        email: pre.email,
        name: 'Victim',
      });
      assert.equal(invited.statusCode, 409, invited.body);
      assert.equal(invited.json().error, 'EMAIL_TAKEN');
      const sent = await as(usher.t, admin.token).post(`/api/admin/users/${pre.userId}/password-reset`);
      assert.equal(sent.statusCode, 202, sent.body);
      const [mail] = await waitForMails(smtp, pre.email, SUBJECTS.reset);
      // An invitation's link is this one: /reset-password, POST /api/password/reset.
      const res = await usher.t.post('/api/password/reset', {
        token: linkToken(mail!, '/reset-password'),
        password: 'the victim’s own passphrase',
      });
      assert.equal(res.statusCode, 204, res.body);
      await assertTakenBack(usher, pre, 'password_reset');
    });

    test('an invitation accepted: no provider identity ever joins an invited account before it', async () => {
      const usher = apps.b;
      const attacker = providerPerson(provider, { email_verified: false });
      const invited = await as(usher.t, admin.token).post('/api/admin/users', {
        email: attacker.email,
        name: 'Invitee',
      });
      assert.equal(invited.statusCode, 201, invited.body);
      // The account exists, not yet verified: the identity is refused, not linked.
      await assertRefused(
        usher,
        await new Browser().flow(usher, provider, { login: attacker.login }),
        'ACCOUNT_EXISTS',
      );
      assert.deepEqual(await identitiesOf(BigInt(invited.json().id)), []);
      const [mail] = await waitForMails(smtp, attacker.email!, /invit/i);
      const res = await usher.t.post('/api/password/reset', {
        token: linkToken(mail!, '/reset-password'),
        password: 'the invitee’s own passphrase',
      });
      assert.equal(res.statusCode, 204, res.body);
      await assertRefused(
        usher,
        await new Browser().flow(usher, provider, { login: attacker.login }),
        'ACCOUNT_EXISTS',
      );
    });

    test('an admin marking the email verified (PATCH /api/admin/users/{id})', async () => {
      const usher = apps.b;
      const pre = await preAccount(usher);
      const res = await as(usher.t, admin.token).patch(`/api/admin/users/${pre.userId}`, {
        emailVerified: true,
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(res.json().identities, [], 'the admin’s view shows none left');
      await assertTakenBack(usher, pre, 'admin');
    });

    test('the CLI’s users verify', async () => {
      const usher = apps.b;
      const pre = await preAccount(usher);
      const config = { ...testConfig(store, 'b'), oauth: oauthSettings(provider.issuer) };
      const database = openDatabase(config.databaseUrl, config.database);
      try {
        await compose(config, database).users.users.markEmailVerified(pre.email);
      } finally {
        await database.close();
      }
      // The CLI's process does not deliver: the server's worker sends what it queued.
      await assertTakenBack(usher, pre, 'cli');
    });

    test('an identity left unproven on an account verified before the rule: the rule applies at its next sign-in', async () => {
      const usher = apps.b;
      const pre = await preAccount(usher);
      // The state a proof of the mailbox left before every proof applied the rule.
      await read((db) =>
        sql`update users set email_verified_at = ${new Date().toISOString()} where id = ${pre.userId}`.execute(
          db,
        ),
      );
      await assertRefused(
        usher,
        await new Browser().flow(usher, provider, { login: pre.attacker.login }),
        'ACCOUNT_EXISTS',
      );
      await assertTakenBack(usher, pre, 'already_verified');
    });
  },
);
