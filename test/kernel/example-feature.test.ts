// A new feature with state is a new folder and one line (docs/architecture.md): the example
// feature (test/kernel/example-feature/) brings a table, a repository, a service, routes, an audit
// event, a metric, a mail with its texts and a setting, and is added to the app by the one line
// below (`FEATURES.with(exampleFeature)`), nothing else outside its folder.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Profile } from '../../src/config.ts';
import { FEATURES } from '../../src/features.ts';
import { asUser, newUser, register, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { mailTo, metric, waitForMails } from '../helpers/mail.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { exampleFeature } from './example-feature/feature.ts';

// The one line.
const WITH_EXAMPLE = FEATURES.with(exampleFeature);

describeEachStore('A feature with state, added by one line (the example feature)', (store) => {
  const apps = {} as Record<Profile, TestApp>;
  let smtp: TestSmtp;
  before(async () => {
    smtp = await startSmtp();
    // Its setting, as an operator sets it.
    const environment = { EXAMPLE_NOTE_MAX_LENGTH: '20' };
    const mail = mailTo(smtp.url);
    apps.a = await startApp(store, 'a', { environment, mail }, { features: WITH_EXAMPLE });
    apps.b = await startApp(store, 'b', { environment, mail }, { features: WITH_EXAMPLE });
  });
  after(async () => {
    await apps.a.close();
    await apps.b.close();
    await smtp.close();
  });

  for (const profile of ['a', 'b'] as const) {
    test(`ISSUE 41 (${profile}): its route writes its table through its repository, in the unit of work`, async () => {
      const t = apps[profile];
      const user = await register(t);
      const token = await signIn(t, user);
      const added = await asUser(t, token).post('/api/example/notes', { text: 'remember the milk' });
      assert.equal(added.statusCode, 201, added.body);
      const note = added.json() as { id: string; text: string };
      assert.equal(note.text, 'remember the milk');
      const listed = await asUser(t, token).get('/api/example/notes');
      assert.equal(listed.statusCode, 200);
      assert.deepEqual(
        (listed.json() as Array<{ id: string }>).map((n) => n.id),
        [note.id],
      );
      // Another account sees none of them.
      const other = await register(t);
      const theirs = await asUser(t, await signIn(t, other)).get('/api/example/notes');
      assert.deepEqual(theirs.json(), []);
    });

    test(`ISSUE 41 (${profile}): its audit event is recorded with the change, and its metric counts it`, async () => {
      const t = apps[profile];
      const before = await metric(t, 'usher_example_notes_total');
      const user = await register(t);
      const token = await signIn(t, user);
      const added = await asUser(t, token).post('/api/example/notes', { text: 'a note' });
      assert.equal(added.statusCode, 201, added.body);
      const { id } = added.json() as { id: string };
      const activity = await asUser(t, token).get('/api/account/activity');
      assert.equal(activity.statusCode, 200, activity.body);
      const event = (activity.json() as Array<{ type: string; details: Record<string, unknown> }>).find(
        (item) => item.type === 'example.note_added',
      );
      assert.deepEqual(event?.details, { noteId: id });
      assert.equal(await metric(t, 'usher_example_notes_total'), before + 1);
    });

    test(`ISSUE 41 (${profile}): its mail is sent with its texts, in the account's language`, async () => {
      const t = apps[profile];
      const user = newUser();
      const registered = await t.post('/api/users', user, { 'accept-language': 'de' });
      assert.equal(registered.statusCode, 201, registered.body);
      const token = await signIn(t, user);
      const added = await asUser(t, token).post('/api/example/notes', { text: 'eins' });
      assert.equal(added.statusCode, 201, added.body);
      const [mail] = await waitForMails(smtp, user.email, /Notiz/);
      assert.equal(mail!.subject, 'Ihrem Konto wurde eine Notiz hinzugefügt');
      assert.match(mail!.text, /eine Notiz mit 4 Zeichen hinzugefügt/);
    });

    test(`ISSUE 41 (${profile}): its routes are in the OpenAPI document, and bad input gets Usher's error`, async () => {
      const t = apps[profile];
      const doc = (await t.get('/openapi.json')).json() as { paths: Record<string, unknown> };
      assert.ok(doc.paths['/api/example/notes'], 'the example route is documented');
      const token = await signIn(t, await register(t));
      const long = await asUser(t, token).post('/api/example/notes', { text: 'x'.repeat(21) });
      assert.equal(long.statusCode, 400, 'EXAMPLE_NOTE_MAX_LENGTH=20 refuses 21 characters');
      assert.match(long.body, /at most 20 characters/);
      const bad = await asUser(t, token).post('/api/example/notes', { text: 5 });
      assert.equal(bad.statusCode, 400);
      assert.equal(
        (bad.json() as { code?: string; error?: string }).code ?? (bad.json() as { error?: string }).error,
        'VALIDATION_FAILED',
      );
    });
  }
});

test('ISSUE 41: a wrong value of its setting stops the start, naming it', async () => {
  await assert.rejects(
    startApp(
      { kind: 'sqlite', url: 'sqlite::memory:' },
      'b',
      { environment: { EXAMPLE_NOTE_MAX_LENGTH: 'many' } },
      { features: WITH_EXAMPLE },
    ),
    /^ConfigError: EXAMPLE_NOTE_MAX_LENGTH: "many" is not accepted; expected an integer from 1 to 10000$/,
  );
});

test('ISSUE 41: the example feature imports nothing private of another feature', () => {
  const folder = join(import.meta.dirname, 'example-feature');
  for (const file of readdirSync(folder)) {
    const text = readFileSync(join(folder, file), 'utf8');
    for (const [, path] of text.matchAll(/from '(\.\.\/\.\.\/\.\.\/src\/[^']+)'/g)) {
      const inSrc = path!.slice('../../../src/'.length);
      const [top, rest] = [inSrc.split('/')[0]!, inSrc.split('/').slice(1).join('/')];
      const shared = ['kernel', 'db', 'shared', 'plugins'].includes(top) || !inSrc.includes('/');
      assert.ok(shared || rest === 'feature.ts' || rest === 'index.ts', `${file} imports ${path}`);
    }
  }
});
