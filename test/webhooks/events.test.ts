// Webhook events (CONTRACT "Administration", webhooks), black-box on both stores: every event type
// the contract lists reaches a real receiver registered for it, caused through the HTTP API the way
// an account really changes (registration, sign-in, PUT /api/users/{id}, the reset and verification
// links mailed through a real SMTP server, sign-out and ended sessions, the admin API, the CLI in a
// process of its own, a real OpenID provider for identities, and the reset that drops an identity
// its provider never verified), each delivery verified by the `standardwebhooks` package, with the
// data the event carries. Also: a receiver listening for some types gets only those, the webhook-id is
// the same at every attempt of one event and differs between events, and the deliveries list shows
// the very body that was received.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { as, type SignedIn, staff } from '../admin/support.ts';
import { register, signIn, type TestApp } from '../helpers/app.ts';
import { mailTo, SUBJECTS, waitForMails } from '../helpers/mail.ts';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.ts';
import { runProcess } from '../helpers/process.ts';
import { linkToken, startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';
import type { Received } from '../helpers/webhook-receiver.ts';
import {
  assertSignedIn,
  Browser,
  listeningUsher,
  PROVIDER,
  providerPerson,
  type Usher,
} from '../oauth/support.ts';
import {
  ALL_EVENTS,
  about,
  countById,
  deliveriesOf,
  listeningReceiver,
  of,
  waitForDeliveries,
  webhookSettings,
} from './support.ts';

const CLI = fileURLToPath(new URL('../../bin/usher.mjs', import.meta.url));
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
/** Standard Webhooks' message id as Usher makes it: msg_ and 16 random bytes, base64url. */
const MESSAGE_ID = /^msg_[A-Za-z0-9_-]{22}$/;

describeEachStore('webhook events', (store) => {
  let provider: TestOidcProvider;
  let smtp: TestSmtp;
  let usher: Usher;
  let app: TestApp;
  let admin: SignedIn;

  before(async () => {
    provider = await startOidcProvider();
    smtp = await startSmtp();
    // A Usher with the test provider configured (for identity.linked and identity.unlinked), mail
    // to a real SMTP server (for the reset and verification links), and receivers on loopback.
    usher = await listeningUsher(store, 'b', provider, {
      overrides: { mail: mailTo(smtp.url), webhooks: webhookSettings() },
    });
    app = usher.t;
    admin = await staff(app, store, 'admin');
  });
  after(async () => {
    await app?.close();
    await provider?.close();
    await smtp?.close();
  });

  const bearer = (token: string) => ({
    authorization: `Bearer ${token}`,
    'content-type': 'application/json',
  });
  const put = (token: string, id: bigint, body: unknown) =>
    app.inject({
      method: 'PUT',
      url: `/api/users/${id}`,
      headers: bearer(token),
      payload: JSON.stringify(body),
    });
  const sessionId = async (token: string): Promise<string> => {
    const res = await app.inject({ method: 'GET', url: '/api/session', headers: bearer(token) });
    assert.equal(res.statusCode, 200, res.body);
    return res.json().session.id;
  };

  /** What every delivery is: verified, its id and body as the specification and the contract say. */
  function assertWellFormed(r: Received, type: string) {
    assert.ok(r.verified, `standardwebhooks verified the ${type} delivery`);
    assert.equal(r.type, type);
    assert.match(r.id, MESSAGE_ID);
    assert.match(r.at, ISO, 'the body has the event’s time');
    const body = JSON.parse(r.raw);
    assert.deepEqual(Object.keys(body).sort(), ['data', 'timestamp', 'type'], r.raw);
    // A JSON integer, never a string: an app's `data.userId === id` must hold.
    assert.match(r.raw, new RegExp(`"userId":${r.data.userId}[,}]`), r.raw);
    assert.equal(typeof r.data.userId, 'number');
  }

  test('user.created: a registration reaches a receiver listening for it, verified by standardwebhooks, with the account’s data', async (t) => {
    const { receiver } = await listeningReceiver(t, app, admin.token, ['user.created']);
    const before = Math.floor(Date.now() / 1000);
    const user = await register(app);
    const [r] = await receiver.waitFor(1, of(user.id));
    assertWellFormed(r!, 'user.created');
    // The signature's timestamp is the attempt's, in seconds (standardwebhooks refuses one 5 min off).
    assert.ok(
      r!.timestamp >= before - 1 && r!.timestamp <= Math.floor(Date.now() / 1000) + 1,
      String(r!.timestamp),
    );
    const registered = user.res.json();
    assert.deepEqual(r!.data, {
      userId: Number(user.id),
      via: 'registration',
      email: user.email,
      name: user.name,
      emailVerified: false,
      role: 'user',
      createdAt: registered.createdAt,
    });
    assert.deepEqual(
      receiver.all.map((x) => x.answered),
      [204],
      'delivered at the first attempt, nothing else sent to a receiver of user.created only',
    );
  });

  test('user.created by an admin’s invitation, and by a CLI import (recorded by another process, sent by the server’s sender); password.changed by the CLI', async (t) => {
    const { receiver } = await listeningReceiver(t, app, admin.token, ['user.created', 'password.changed']);
    const invited = await as(app, admin.token).post('/api/admin/users', {
      email: `invited.${Date.now()}@example.com`,
      name: 'Invited Person',
    });
    assert.equal(invited.statusCode, 201, invited.body);
    const [byInvitation] = await receiver.waitFor(1, of(invited.json().id));
    assertWellFormed(byInvitation!, 'user.created');
    assert.equal(byInvitation!.data.via, 'invitation');
    assert.equal(byInvitation!.data.email, invited.json().email);

    const dir = mkdtempSync(join(tmpdir(), 'usher-webhooks-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'users.jsonl');
    // Rows with a password and rows without one go in the same batch (one insert of deliveries
    // per receiver): each account makes its event.
    const stamp = Date.now();
    const imported = [1, 2, 3, 4].map((i) => ({
      email: `imported${i}.${stamp}@example.com`,
      name: `Imported ${i}`,
      ...(i <= 2 ? { password: `imported-pass-${i}` } : {}),
    }));
    writeFileSync(file, imported.map((u) => JSON.stringify(u)).join('\n'));
    const env = { DATABASE_URL: store.url };
    const run = await runProcess(process.execPath, [CLI, 'users', 'import', file], env);
    assert.equal(run.code, 0, run.stderr);
    const emails = new Set(imported.map((u) => u.email));
    const arrived = await receiver.waitFor(
      4,
      (r) => r.type === 'user.created' && emails.has(String(r.data.email)),
    );
    for (const r of arrived) {
      assertWellFormed(r, 'user.created');
      const row = imported.find((u) => u.email === r.data.email)!;
      assert.equal(r.data.name, row.name);
      assert.equal(r.data.emailVerified, false);
      assert.equal(typeof r.data.via, 'string');
    }
    assert.deepEqual(
      arrived
        .filter((r) => r.data.via === 'import')
        .map((r) => r.data.email)
        .sort(),
      imported.map((u) => u.email).sort(),
      'every account says it was imported',
    );
    assert.equal(new Set(arrived.map((r) => r.id)).size, 4, 'one webhook-id per account');

    const userId = arrived.find((r) => r.data.email === imported[0]!.email)!.data.userId as number;
    const set = await runProcess(
      process.execPath,
      [CLI, 'users', 'set-password', '--email', imported[0]!.email],
      env,
      'set-by-the-cli-now\n',
    );
    assert.equal(set.code, 0, set.stderr);
    const [changed] = await receiver.waitFor(1, of(userId, 'password.changed'));
    assertWellFormed(changed!, 'password.changed');
    assert.deepEqual(changed!.data, { userId, via: 'cli' });
  });

  test('user.signed_in: a cookie sign-in and a token sign-in each send one, naming the method and the new session', async (t) => {
    const user = await register(app);
    const { receiver } = await listeningReceiver(t, app, admin.token, ['user.signed_in']);
    const cookie = await signIn(app, user);
    const created = await app.post('/api/sessions', { email: user.email, password: user.password });
    assert.equal(created.statusCode, 201, created.body);
    const token = created.json().token as string;

    const received = await receiver.waitFor(2, of(user.id));
    for (const r of received) assertWellFormed(r, 'user.signed_in');
    assert.deepEqual(
      received.map((r) => r.data),
      [
        { userId: Number(user.id), method: 'password', sessionId: await sessionId(cookie) },
        { userId: Number(user.id), method: 'password', sessionId: await sessionId(token) },
      ],
      'in the order they happened, each with its own session id',
    );
    assert.notEqual(received[0]!.id, received[1]!.id, 'two events, two webhook-ids');
  });

  test('user.updated: a name changed by PUT /api/users/{id} and then by an admin’s PATCH, in that order, with the account as it is after each', async (t) => {
    const user = await register(app);
    const token = await signIn(app, user);
    const { receiver } = await listeningReceiver(t, app, admin.token, ['user.updated']);

    const renamed = await put(token, user.id, { email: user.email, name: 'Renamed By Owner' });
    assert.equal(renamed.statusCode, 200, renamed.body);
    const patched = await as(app, admin.token).patch(`/api/admin/users/${user.id}`, {
      name: 'Renamed By Admin',
    });
    assert.equal(patched.statusCode, 200, patched.body);

    const received = await receiver.waitFor(2, of(user.id));
    for (const r of received) assertWellFormed(r, 'user.updated');
    const common = {
      userId: Number(user.id),
      changed: ['name'],
      email: user.email,
      emailVerified: false,
      role: 'user',
      createdAt: user.res.json().createdAt,
    };
    assert.deepEqual(
      received.map((r) => r.data),
      [
        { ...common, name: 'Renamed By Owner' },
        { ...common, name: 'Renamed By Admin' },
      ],
    );
  });

  test('password.changed by PUT with currentPassword, then session.ended for the other sessions it ended', async (t) => {
    const user = await register(app);
    const token = await signIn(app, user);
    const other = await signIn(app, user);
    const otherId = await sessionId(other);
    const { receiver } = await listeningReceiver(t, app, admin.token, ['password.changed', 'session.ended']);

    const res = await put(token, user.id, {
      email: user.email,
      name: user.name,
      password: 'a brand new password',
      currentPassword: user.password,
    });
    assert.equal(res.statusCode, 200, res.body);

    const received = await receiver.waitFor(2, of(user.id));
    assert.deepEqual(
      received.map((r) => [r.type, r.data]),
      [
        ['password.changed', { userId: Number(user.id), via: 'change' }],
        ['session.ended', { userId: Number(user.id), sessionIds: [otherId], reason: 'password_changed' }],
      ],
    );
    assertWellFormed(received[0]!, 'password.changed');
    assertWellFormed(received[1]!, 'session.ended');
  });

  test('a reset through the mailed link: password.changed (via reset), email.verified (the link reached the address), session.ended', async (t) => {
    const user = await register(app);
    const token = await signIn(app, user);
    const ended = await sessionId(token);
    const { receiver } = await listeningReceiver(t, app, admin.token, [
      'password.changed',
      'email.verified',
      'session.ended',
    ]);

    const forgot = await app.post('/api/password/forgot', { email: user.email });
    assert.equal(forgot.statusCode, 202, forgot.body);
    const [mail] = await waitForMails(smtp, user.email, SUBJECTS.reset);
    const reset = await app.post('/api/password/reset', {
      token: linkToken(mail!, '/reset-password'),
      password: 'reset to something new',
    });
    assert.equal(reset.statusCode, 204, reset.body);

    const received = await receiver.waitFor(3, of(user.id));
    assert.deepEqual(
      received.map((r) => [r.type, r.data]),
      [
        ['password.changed', { userId: Number(user.id), via: 'reset' }],
        ['email.verified', { userId: Number(user.id), email: user.email }],
        ['session.ended', { userId: Number(user.id), sessionIds: [ended], reason: 'password_reset' }],
      ],
    );
    for (const r of received) assertWellFormed(r, r.type);
  });

  test('session.ended: sign-out, ending one session by id, ending the others, and an admin ending them all, each with its reason', async (t) => {
    const user = await register(app);
    const tokens = [];
    for (let i = 0; i < 5; i++) tokens.push(await signIn(app, user));
    const ids = await Promise.all(tokens.map(sessionId));
    const { receiver } = await listeningReceiver(t, app, admin.token, ['session.ended']);

    // Sign-out of session 0.
    const out = await app.inject({
      method: 'POST',
      url: '/api/signout',
      headers: { authorization: `Bearer ${tokens[0]}` },
    });
    assert.equal(out.statusCode, 204, out.body);
    await receiver.waitFor(1, of(user.id));
    // Session 1 ends session 2 by its id.
    const byId = await app.inject({
      method: 'DELETE',
      url: `/api/sessions/${ids[2]}`,
      headers: { authorization: `Bearer ${tokens[1]}` },
    });
    assert.equal(byId.statusCode, 204, byId.body);
    await receiver.waitFor(2, of(user.id));
    // Session 1 ends all the others (3 and 4).
    const others = await app.inject({
      method: 'DELETE',
      url: '/api/sessions',
      headers: { authorization: `Bearer ${tokens[1]}` },
    });
    assert.equal(others.statusCode, 204, others.body);
    await receiver.waitFor(3, of(user.id));
    // An admin ends what is left (session 1).
    const ended = await as(app, admin.token).delete(`/api/admin/users/${user.id}/sessions`);
    assert.equal(ended.statusCode, 204, ended.body);

    const received = await receiver.waitFor(4, of(user.id));
    for (const r of received) assertWellFormed(r, 'session.ended');
    const data = received.map((r) => ({
      ...r.data,
      sessionIds: [...(r.data.sessionIds as string[])].sort(),
    }));
    const userId = Number(user.id);
    assert.deepEqual(data, [
      { userId, sessionIds: [ids[0]], reason: 'signout' },
      { userId, sessionIds: [ids[2]], reason: 'revoked' },
      { userId, sessionIds: [ids[3], ids[4]].sort(), reason: 'revoked' },
      { userId, sessionIds: [ids[1]], reason: 'admin' },
    ]);
  });

  test('email.verified: by the link mailed at registration, and by an admin’s PATCH emailVerified (with its user.updated)', async (t) => {
    const { receiver } = await listeningReceiver(t, app, admin.token, ['email.verified', 'user.updated']);
    const byLink = await register(app);
    const [mail] = await waitForMails(smtp, byLink.email, SUBJECTS.verify);
    const verify = await app.post('/api/email/verify', { token: linkToken(mail!, '/verify-email') });
    assert.equal(verify.statusCode, 204, verify.body);
    const [linked] = await receiver.waitFor(1, of(byLink.id));
    assertWellFormed(linked!, 'email.verified');
    assert.deepEqual(linked!.data, { userId: Number(byLink.id), email: byLink.email });

    const byAdmin = await register(app);
    const patched = await as(app, admin.token).patch(`/api/admin/users/${byAdmin.id}`, {
      emailVerified: true,
    });
    assert.equal(patched.statusCode, 200, patched.body);
    const received = await receiver.waitFor(2, of(byAdmin.id));
    assert.deepEqual(
      received.map((r) => r.type),
      ['user.updated', 'email.verified'],
    );
    assert.deepEqual(received[0]!.data.changed, ['emailVerified']);
    assert.equal(received[0]!.data.emailVerified, true, 'the account as it is after the change');
    assert.deepEqual(received[1]!.data, { userId: Number(byAdmin.id), email: byAdmin.email });
    // Nothing about the first user but the one event: verifying by link changes no profile field.
    assert.equal(about(receiver, byLink.id).length, 1);
  });

  test('user.disabled (with the reason, and session.ended for its sessions) and user.enabled, through the admin API', async (t) => {
    const user = await register(app);
    const session = await sessionId(await signIn(app, user));
    const { receiver } = await listeningReceiver(t, app, admin.token, [
      'user.disabled',
      'user.enabled',
      'session.ended',
    ]);
    const disabled = await as(app, admin.token).post(`/api/admin/users/${user.id}/disable`, {
      reason: 'chargeback',
    });
    assert.equal(disabled.statusCode, 200, disabled.body);
    const enabled = await as(app, admin.token).post(`/api/admin/users/${user.id}/enable`, {});
    assert.equal(enabled.statusCode, 200, enabled.body);
    // Disabled again without a reason: the reason is null, not absent.
    const again = await as(app, admin.token).post(`/api/admin/users/${user.id}/disable`, {});
    assert.equal(again.statusCode, 200, again.body);

    const received = await receiver.waitFor(4, of(user.id));
    for (const r of received) assertWellFormed(r, r.type);
    const userId = Number(user.id);
    assert.deepEqual(
      received.map((r) => [r.type, r.data]),
      [
        ['user.disabled', { userId, reason: 'chargeback' }],
        ['session.ended', { userId, sessionIds: [session], reason: 'disabled' }],
        ['user.enabled', { userId }],
        ['user.disabled', { userId, reason: null }],
      ],
    );
  });

  test('user.deleted: by its owner (DELETE /api/users/{id} with currentPassword) and by an admin', async (t) => {
    const { receiver } = await listeningReceiver(t, app, admin.token, ['user.deleted']);
    const self = await register(app);
    const token = await signIn(app, self);
    const res = await app.inject({
      method: 'DELETE',
      url: `/api/users/${self.id}`,
      headers: bearer(token),
      payload: JSON.stringify({ currentPassword: self.password }),
    });
    assert.equal(res.statusCode, 204, res.body);
    const byAdmin = await register(app);
    const deleted = await as(app, admin.token).delete(`/api/admin/users/${byAdmin.id}`);
    assert.equal(deleted.statusCode, 204, deleted.body);

    const [own] = await receiver.waitFor(1, of(self.id));
    const [admins] = await receiver.waitFor(1, of(byAdmin.id));
    assertWellFormed(own!, 'user.deleted');
    assertWellFormed(admins!, 'user.deleted');
    assert.deepEqual(own!.data, { userId: Number(self.id), via: 'self' });
    assert.deepEqual(admins!.data, { userId: Number(byAdmin.id), via: 'admin' });
  });

  test('identity.linked and identity.unlinked: an account made at a provider sign-in (user.created, identity.linked, user.signed_in in order), and a link then unlink from an account', async (t) => {
    const { receiver } = await listeningReceiver(t, app, admin.token, ALL_EVENTS);

    // A new account from the provider: created, its identity linked, then signed in.
    const person = providerPerson(provider);
    const token = await assertSignedIn(
      usher,
      await new Browser().flow(usher, provider, { login: person.login }),
    );
    const session = await app.inject({ method: 'GET', url: '/api/session', headers: bearer(token) });
    const made = session.json() as { user: { id: number }; session: { id: string } };
    const first = await receiver.waitFor(3, of(made.user.id));
    assert.deepEqual(
      first.map((r) => r.type),
      ['user.created', 'identity.linked', 'user.signed_in'],
    );
    for (const r of first) assertWellFormed(r, r.type);
    assert.equal(first[0]!.data.via, 'oauth');
    assert.equal(first[0]!.data.email, person.email);
    assert.equal(first[0]!.data.emailVerified, true, 'the provider verified it');
    assert.equal(first[1]!.data.provider, PROVIDER);
    assert.equal(typeof first[1]!.data.identityId, 'string');
    assert.equal(first[2]!.data.sessionId, made.session.id);

    // A password account links an identity from its account, then unlinks it.
    const user = await register(app);
    const browser = new Browser();
    const own = await browser.passwordSignIn(usher, user);
    const linking = providerPerson(provider);
    browser.jar.clearHost(provider.issuer);
    const flow = await browser.flow(usher, provider, {
      login: linking.login,
      intent: 'link',
      redirectTo: '/account',
    });
    assert.equal(flow.location?.href, `${usher.base}/account`, 'linked, no error');
    const listed = await app.inject({ method: 'GET', url: '/api/identities', headers: bearer(own) });
    const [identity] = listed.json() as { id: string }[];
    assert.ok(identity, listed.body);
    const unlinked = await app.inject({
      method: 'DELETE',
      url: `/api/identities/${identity.id}`,
      headers: { authorization: `Bearer ${own}` },
    });
    assert.equal(unlinked.statusCode, 204, unlinked.body);

    const userId = Number(user.id);
    const received = await receiver.waitFor(2, (r) => of(userId)(r) && r.type.startsWith('identity.'));
    assert.deepEqual(
      received.map((r) => [r.type, r.data]),
      [
        ['identity.linked', { userId, identityId: identity.id, provider: PROVIDER }],
        ['identity.unlinked', { userId, identityId: identity.id, provider: PROVIDER }],
      ],
    );
  });

  test('a receiver listening for some types gets only those, while one listening for all gets every event', async (t) => {
    const everything = await listeningReceiver(t, app, admin.token, ALL_EVENTS);
    const some = await listeningReceiver(t, app, admin.token, ['user.deleted', 'user.signed_in']);
    const user = await register(app);
    const token = await signIn(app, user);
    assert.equal((await put(token, user.id, { email: user.email, name: 'Someone Else' })).statusCode, 200);
    const gone = await app.inject({
      method: 'DELETE',
      url: `/api/users/${user.id}`,
      headers: bearer(token),
      payload: JSON.stringify({ currentPassword: user.password }),
    });
    assert.equal(gone.statusCode, 204, gone.body);

    const all = await everything.receiver.waitFor(4, of(user.id));
    assert.deepEqual(
      all.map((r) => r.type),
      ['user.created', 'user.signed_in', 'user.updated', 'user.deleted'],
    );
    // Its events arrive in order: once user.deleted is in, anything else queued for it would be too.
    await some.receiver.waitFor(1, of(user.id, 'user.deleted'));
    assert.deepEqual(
      some.receiver.all.filter(of(user.id)).map((r) => r.type),
      ['user.signed_in', 'user.deleted'],
    );
    // And nothing else was even queued for it.
    const queued = await deliveriesOf(app, admin.token, some.webhook.id);
    assert.deepEqual(
      queued.filter((d) => d.userId === Number(user.id)).map((d) => d.type),
      ['user.deleted', 'user.signed_in'],
      'newest first',
    );
    // One event, one webhook-id, whoever receives it.
    const signedIn = (r: Received) => r.type === 'user.signed_in';
    assert.equal(all.find(signedIn)!.id, some.receiver.accepted.find(of(user.id, 'user.signed_in'))!.id);
  });

  test('the webhook-id is the same at every attempt of one event (and so is the body), and differs between events', async (t) => {
    // Each event is refused twice (503, then 500), then taken.
    const seen = new Map<string, number>();
    const { receiver, webhook } = await listeningReceiver(t, app, admin.token, ['user.updated'], {
      answer: (r) => {
        const n = (seen.get(r.id) ?? 0) + 1;
        seen.set(r.id, n);
        return n === 1 ? 503 : n === 2 ? 500 : 204;
      },
    });
    const user = await register(app);
    const token = await signIn(app, user);
    for (const name of ['First Name', 'Second Name'])
      assert.equal((await put(token, user.id, { email: user.email, name })).statusCode, 200);

    const accepted = await receiver.waitFor(2, of(user.id));
    assert.deepEqual(
      accepted.map((r) => r.data.name),
      ['First Name', 'Second Name'],
    );
    assert.notEqual(accepted[0]!.id, accepted[1]!.id, 'two events, two webhook-ids');
    const counts = countById(receiver.all);
    assert.deepEqual([...counts.values()], [3, 3], 'each id sent three times, and no other id');
    for (const r of accepted) {
      const attempts = receiver.all.filter((x) => x.id === r.id);
      assert.deepEqual(
        attempts.map((x) => x.answered),
        [503, 500, 204],
      );
      assert.ok(
        attempts.every((x) => x.verified && x.raw === r.raw),
        'every attempt carries the same body, signed',
      );
    }
    // The second event waited for the first: none of its attempts came before the first was taken.
    const firstTaken = receiver.all.indexOf(accepted[0]!);
    assert.ok(receiver.all.findIndex((x) => x.id === accepted[1]!.id) > firstTaken, 'in order per user');

    const listed = await waitForDeliveries(
      app,
      admin.token,
      webhook.id,
      (list) => list.filter((d) => d.userId === Number(user.id) && d.status === 'sent').length === 2,
      'both deliveries marked sent',
    );
    for (const d of listed) {
      assert.equal(d.attempts, 3);
      assert.equal(d.lastStatus, 204);
      assert.equal(d.lastError, null);
    }
    assert.deepEqual(
      listed.map((d) => d.messageId).reverse(),
      accepted.map((r) => r.id),
    );
  });

  test('the deliveries list shows each delivery as it was received: its body, webhook-id, type, user, and sent at the first attempt', async (t) => {
    const { receiver, webhook } = await listeningReceiver(t, app, admin.token, ALL_EVENTS);
    const user = await register(app);
    const token = await signIn(app, user);
    assert.equal((await put(token, user.id, { email: user.email, name: 'Listed Name' })).statusCode, 200);
    const out = await app.inject({
      method: 'POST',
      url: '/api/signout',
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(out.statusCode, 204);

    const received = await receiver.waitFor(4, of(user.id));
    const listed = await waitForDeliveries(
      app,
      admin.token,
      webhook.id,
      (list) => list.filter((d) => d.userId === Number(user.id) && d.status === 'sent').length === 4,
      'four deliveries marked sent',
    );
    const mine = listed.filter((d) => d.userId === Number(user.id)).reverse();
    assert.deepEqual(
      mine.map((d) => d.type),
      ['user.created', 'user.signed_in', 'user.updated', 'session.ended'],
    );
    for (const [i, d] of mine.entries()) {
      const r = received[i]!;
      assert.equal(d.messageId, r.id, 'the webhook-id header');
      assert.equal(d.type, r.type);
      assert.deepEqual(d.payload, JSON.parse(r.raw), `the body received for ${d.type}`);
      assert.equal(d.status, 'sent');
      assert.equal(d.attempts, 1);
      assert.equal(d.lastStatus, 204);
      assert.equal(d.lastError, null);
      assert.equal(d.nextAttemptAt, null, 'nothing more to try');
      assert.match(d.sentAt ?? '', ISO);
      assert.match(d.createdAt, ISO);
    }
    // Filtered by status: all four are sent, none pending or failed.
    const sent = await deliveriesOf(app, admin.token, webhook.id, 'sent');
    assert.equal(sent.filter((d) => d.userId === Number(user.id)).length, 4);
    assert.equal((await deliveriesOf(app, admin.token, webhook.id, 'pending')).length, 0);
  });

  test('a password reset that removes an identity its provider never verified sends identity.unlinked (reason password_reset)', async (t) => {
    const { receiver } = await listeningReceiver(t, app, admin.token, [
      'identity.linked',
      'identity.unlinked',
    ]);
    // An account made at the provider with an email it did not verify: its identity is unproven,
    // and signs nothing in until the address is proven (decision 195), but the account is made.
    const person = providerPerson(provider, { email_verified: false });
    await new Browser().flow(usher, provider, { login: person.login });
    const [linked] = await receiver.waitFor(1, (r) => r.type === 'identity.linked');
    const userId = linked!.data.userId as number;

    // The mailbox's owner resets the password: the unproven identity goes (decision 195).
    const forgot = await app.post('/api/password/forgot', { email: person.email });
    assert.equal(forgot.statusCode, 202);
    const [mail] = await waitForMails(smtp, person.email!, SUBJECTS.reset);
    const reset = await app.post('/api/password/reset', {
      token: linkToken(mail!, '/reset-password'),
      password: 'the mailbox owner’s password',
    });
    assert.equal(reset.statusCode, 204, reset.body);
    const signedIn = await app.post('/api/sessions', {
      email: person.email,
      password: 'the mailbox owner’s password',
    });
    const listed = await app.inject({
      method: 'GET',
      url: '/api/identities',
      headers: { authorization: `Bearer ${signedIn.json().token}` },
    });
    assert.deepEqual(listed.json(), [], 'the identity is gone');

    const [unlinked] = await receiver.waitFor(1, of(userId, 'identity.unlinked'));
    assertWellFormed(unlinked!, 'identity.unlinked');
    assert.deepEqual(unlinked!.data, {
      userId,
      identityId: linked!.data.identityId,
      provider: PROVIDER,
      reason: 'password_reset',
    });
  });
});
