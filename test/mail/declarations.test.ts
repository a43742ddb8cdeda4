// Mails per feature (decision 380): each feature declares its mails with their texts, and the mail
// feature is given the list. Two features declaring one kind stop the start with an error naming
// both; a declaration that cannot work is refused; a feature's mail is sent through the typed API,
// with an operator's texts over its own, exactly as the mails Usher ships.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { checkMailTemplates, MAILS } from '../../src/features.ts';
import { defineMails } from '../../src/mail/catalog.ts';
import { loadOperatorTemplates } from '../../src/mail/operator-templates.ts';
import { MailTemplates } from '../../src/mail/templates.ts';

const NOW = Date.UTC(2026, 10, 27, 14, 5);

/** A feature's mail, as an example feature would declare it. */
const exampleMails = defineMails(
  'example',
  {
    parcelShipped: {
      link: true,
      lifetime: true,
      variables: { parcel: 'text', count: 'number', note: 'optional' },
    },
  },
  {
    en: {
      parcelShipped: {
        subject: 'Parcel {parcel} shipped',
        body: '{count, plural, one {# item} other {# items}}{hasNote, select, yes { ({note})} other {}}. Track it for {validity}.',
        action: 'Track it',
      },
    },
    de: {
      parcelShipped: { subject: 'Paket {parcel} verschickt', body: '{count} Artikel.', action: 'Verfolgen' },
    },
    fr: { parcelShipped: { subject: 'Colis {parcel} expédié', body: '{count} articles.', action: 'Suivre' } },
    es: {
      parcelShipped: { subject: 'Paquete {parcel} enviado', body: '{count} artículos.', action: 'Seguir' },
    },
  },
);

describe('mails declared by the features', () => {
  test('every kind is declared once, by one feature; the list has the mails Usher has always sent', () => {
    const kinds = MAILS.map((m) => m.kind);
    assert.equal(new Set(kinds).size, kinds.length);
    assert.deepEqual([...kinds].sort(), [
      'accountDeleted',
      'emailChanged',
      'identityLinked',
      'identityUnlinked',
      'invitation',
      'passkeyAdded',
      'passkeyRemoved',
      'passwordChanged',
      'passwordReset',
      'recoveryCodeUsed',
      'secondFactorFailures',
      'secondFactorsRemoved',
      'signinCode',
      'signinLink',
      'test',
      'totpDisabled',
      'totpEnabled',
      'verifyEmail',
    ]);
  });

  test('two features declaring one kind stop the start, naming both', () => {
    const again = defineMails(
      'intruder',
      { passwordReset: {} },
      {
        en: { passwordReset: { subject: 'x', body: 'y' } },
        de: { passwordReset: { subject: 'x', body: 'y' } },
        fr: { passwordReset: { subject: 'x', body: 'y' } },
        es: { passwordReset: { subject: 'x', body: 'y' } },
      },
    );
    assert.throws(
      () => new MailTemplates([...MAILS, again.passwordReset]),
      /^Error: the mail "passwordReset" is declared twice, by recovery and by intruder: /,
    );
  });

  test('a declaration that cannot work is refused: a kind no file can be named after, an argument twice, texts amiss', () => {
    const texts = (t: object) => ({ en: t, de: t, fr: t, es: t }) as never;
    assert.throws(
      () =>
        defineMails('x', { 'parcel-shipped': {} }, texts({ 'parcel-shipped': { subject: 's', body: 'b' } })),
      /x's mail "parcel-shipped": a kind is letters only/,
    );
    assert.throws(
      () => defineMails('x', { common: {} }, texts({ common: { subject: 's', body: 'b' } })),
      /not "common"/,
    );
    assert.throws(
      () =>
        defineMails('x', { a: { variables: { name: 'text' } } }, texts({ a: { subject: 's', body: 'b' } })),
      /the argument \{name\} is there twice/,
    );
    assert.throws(
      () =>
        defineMails(
          'x',
          { a: { link: true, variables: { url: 'text' } } },
          texts({ a: { subject: 's', body: 'b', action: 'a' } }),
        ),
      /the argument \{url\} is there twice/,
    );
    const noLabel = defineMails('x', { a: { link: true } }, texts({ a: { subject: 's', body: 'b' } }));
    assert.throws(
      () => new MailTemplates([noLabel.a]),
      /x's mail "a" \(en\): an action, the link's label, goes with a link/,
    );
    const noGerman = defineMails('x', { a: {} }, { en: { a: { subject: 's', body: 'b' } } } as never);
    assert.throws(() => new MailTemplates([noGerman.a]), /x's mail "a" has no de texts/);
  });

  test("a mail not in the app's list is not sent", () => {
    const templates = new MailTemplates(MAILS);
    assert.throws(
      () =>
        templates.compose(
          exampleMails.parcelShipped,
          { email: 'a@example.com', locale: 'en', name: undefined },
          { url: 'https://x.example/t', ttlMs: 3600_000, parcel: 'P1', count: 2, note: undefined },
        ),
      /the mail "parcelShipped" \(example\) is not among the mails this app was given/,
    );
  });

  test("a feature's mail is laid out like every mail, its values typed, and an operator's texts come first", () => {
    const templates = new MailTemplates([...MAILS, ...Object.values(exampleMails)], undefined, {
      now: () => NOW,
    });
    const values = {
      url: 'https://x.example/t#token=1',
      ttlMs: 3600_000,
      parcel: 'P<1>',
      count: 1,
      note: 'fragile',
    };
    const mail = templates.compose(
      exampleMails.parcelShipped,
      { email: 'a@example.com', locale: 'en-GB', name: 'Ana' },
      values,
    );
    assert.equal(mail.subject, 'Parcel P<1> shipped');
    assert.equal(
      mail.text,
      'Hello Ana,\n\n1 item (fragile). Track it for 1 hour.\n\nTrack it:\nhttps://x.example/t#token=1\n\n— Usher\n',
    );
    assert.match(mail.html, /<p><a href="https:\/\/x\.example\/t#token=1">Track it<\/a><\/p>/);
    const german = templates.compose(
      exampleMails.parcelShipped,
      { email: 'a@example.com', locale: 'de', name: undefined },
      values,
    );
    assert.equal(german.text.split('\n')[0], 'Guten Tag,');

    const dir = mkdtempSync(join(tmpdir(), 'usher-example-mail-'));
    try {
      writeFileSync(
        join(dir, 'parcelShipped.en.json'),
        '{"subject": "Your parcel {parcel} ({count, number})"}',
      );
      const own = new MailTemplates([...MAILS, ...Object.values(exampleMails)], loadOperatorTemplates(dir));
      const overridden = own.compose(
        exampleMails.parcelShipped,
        { email: 'a@example.com', locale: 'en', name: undefined },
        values,
      );
      assert.equal(overridden.subject, 'Your parcel P<1> (1)');
      // An argument the example's mail has is unknown to every other mail.
      writeFileSync(join(dir, 'passwordReset.en.json'), '{"subject": "{parcel}"}');
      assert.throws(
        () => new MailTemplates([...MAILS, ...Object.values(exampleMails)], loadOperatorTemplates(dir)),
        /passwordReset\.en\.json: subject: uses \{parcel\}, an argument the passwordReset message does not have/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("loadConfig keeps what an operator's folder holds for checkMailTemplates, which turns a mail it does not fit into a ConfigError", () => {
    const dir = mkdtempSync(join(tmpdir(), 'usher-unknown-mail-'));
    try {
      writeFileSync(join(dir, 'parcelShipped.en.json'), '{"subject": "x"}');
      const config = loadConfig({ MAIL_TEMPLATES_DIR: dir });
      assert.ok(config.mail.templates.locales.en?.messages.parcelShipped?.json);
      assert.throws(
        () => checkMailTemplates(config),
        (error: unknown) =>
          error instanceof ConfigError &&
          error.message.startsWith(
            `MAIL_TEMPLATES_DIR: ${join(dir, 'parcelShipped.en.json')}: names no message Usher sends`,
          ),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// The type checker refuses, at the sender, values a mail does not have (tsc runs over the tests).
const _typed = (templates: MailTemplates, to: { email: string; locale: string; name: undefined }) => {
  templates.compose(exampleMails.parcelShipped, to, {
    url: '',
    ttlMs: 1,
    parcel: '',
    // @ts-expect-error: `count` is a number
    count: '1',
    note: undefined,
  });
  // @ts-expect-error: `ttlMs` is missing for a mail with a lifetime
  templates.compose(exampleMails.parcelShipped, to, { url: '', parcel: '', count: 1, note: undefined });
};
void _typed;
