// Languages (CONTRACT "Sign-in by mail, languages, and users from other systems", issue 31), the
// parts that need no server: how a locale is read from Accept-Language and matched (RFC 4647
// lookup: de-AT → de, anything unknown → en), the built-in catalogs checked by the same rules as
// an operator's, every translation using the same arguments and places as the English text, and
// plural forms and dates as each language writes them, through the real message formatter.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FEATURES, featuresOf, MAILS } from '../../src/features.ts';
import {
  argumentsOf,
  COMMON_PARTS,
  type Mail,
  misusedArguments,
  parseText,
  usedArguments,
} from '../../src/mail/catalog.ts';
import { BUILT_IN_LAYOUTS, MailTemplates } from '../../src/mail/templates.ts';
import { composePageTexts, LocalizedPage } from '../../src/pages/i18n.ts';
import { acceptedLocales, bestLocale, canonicalLocale, preferredLocale } from '../../src/shared/locale.ts';
import { checkLocale } from '../../src/users/rules.ts';

/** Every page text group in every language, as the app composes them at start. */
const PAGE_TEXTS = composePageTexts(featuresOf(FEATURES));

const LANGUAGES = ['en', 'de', 'fr', 'es'] as const;
const NOW = Date.UTC(2026, 10, 27, 14, 5);

describe('a locale from Accept-Language, and the best match', () => {
  test('Accept-Language is read by quality, bad tags and * left out, tags made canonical', () => {
    assert.deepEqual(acceptedLocales('fr-CH, fr;q=0.9, en;q=0.8, de;q=0.7, *;q=0.5'), [
      'fr-CH',
      'fr',
      'en',
      'de',
    ]);
    assert.deepEqual(acceptedLocales('en;q=0.1, DE-at'), ['de-AT', 'en']);
    assert.deepEqual(acceptedLocales('!!, x-private, de'), ['de']);
    assert.deepEqual(acceptedLocales(undefined), []);
    assert.deepEqual(acceptedLocales(''), []);
    // A header of thousands of languages costs no more than its first few.
    assert.equal(
      acceptedLocales(Array.from({ length: 5000 }, (_, i) => `x${i % 9}a`).join(',')).length <= 20,
      true,
    );
  });

  test('the best match is RFC 4647 lookup: de-AT → de, de-CH-1996 → de, unknown → en', () => {
    const shipped = ['en', 'de', 'fr', 'es'];
    assert.equal(bestLocale(['de-AT'], shipped), 'de');
    assert.equal(bestLocale(['de-CH-1996'], shipped), 'de');
    assert.equal(bestLocale(['es-419'], shipped), 'es');
    assert.equal(bestLocale(['ja'], shipped), 'en');
    assert.equal(bestLocale(['ja', 'fr'], shipped), 'fr', 'the next language asked for');
    assert.equal(bestLocale([], shipped), 'en');
    assert.equal(bestLocale(['not a tag'], shipped), 'en');
    assert.equal(bestLocale(['pt-BR'], [...shipped, 'pt']), 'pt', "an operator's language");
  });

  test('the locale kept for a new account: the first language asked for that there are texts for, as the browser wrote it', () => {
    const shipped = ['en', 'de', 'fr', 'es'];
    assert.equal(preferredLocale('de-AT,de;q=0.9', shipped), 'de-AT');
    assert.equal(
      preferredLocale('ja, en-GB;q=0.8', shipped),
      'en-GB',
      'a language without texts is passed over',
    );
    assert.equal(preferredLocale('ja, zh', shipped), undefined);
    assert.equal(preferredLocale(undefined, shipped), undefined);
  });

  test('a locale on input: a BCP 47 tag, kept canonical; anything else is VALIDATION_FAILED naming locale', () => {
    assert.equal(checkLocale('DE-at'), 'de-AT');
    assert.equal(checkLocale(' pt-br '), 'pt-BR');
    assert.equal(checkLocale('sr-latn-rs'), 'sr-Latn-RS');
    assert.equal(canonicalLocale('en-US-u-hc-h23'), 'en-US-u-hc-h23');
    for (const bad of [
      '',
      ' ',
      'not a tag',
      'x-private',
      '*',
      'de_DE',
      'e',
      'a'.repeat(65),
      `de-${'x'.repeat(70)}`,
    ]) {
      assert.throws(
        () => checkLocale(bad),
        (error: Error & { code?: string }) =>
          error.code === 'VALIDATION_FAILED' && /^locale: /.test(error.message),
        JSON.stringify(bad),
      );
    }
  });
});

describe("the built-in mail texts: every feature's mails, and the layout they share", () => {
  test('every message of every language parses and uses only its own arguments, each as what it is', () => {
    for (const language of LANGUAGES) {
      const layout = BUILT_IN_LAYOUTS[language];
      for (const part of COMMON_PARTS) {
        const elements = parseText(layout[part]);
        for (const name of usedArguments(elements))
          assert.ok(argumentsOf('common', part).includes(name), `${language} ${part}: {${name}}`);
        assert.deepEqual(misusedArguments(elements, 'common', part), [], `${language} ${part}`);
      }
      for (const mail of MAILS) {
        const texts = mail.texts[language];
        const id = `${mail.feature}'s ${mail.kind}`;
        assert.equal(texts.action !== undefined, mail.link, `${language} ${id}: a label only with a link`);
        for (const [part, text] of Object.entries(texts)) {
          const elements = parseText(text);
          for (const name of usedArguments(elements))
            assert.ok(argumentsOf(mail).includes(name), `${language} ${id}.${part}: {${name}}`);
          assert.deepEqual(misusedArguments(elements, mail), [], `${language} ${id}.${part}`);
        }
      }
    }
  });

  test('each translation uses the arguments the English text uses: nothing said in English is left out', () => {
    for (const language of LANGUAGES) {
      for (const mail of MAILS) {
        for (const [part, english] of Object.entries(mail.texts.en)) {
          const translated = mail.texts[language][part as 'subject' | 'body'];
          assert.deepEqual(
            [...usedArguments(parseText(translated))].sort(),
            [...usedArguments(parseText(english))].sort(),
            `${language} ${mail.kind}.${part}`,
          );
        }
      }
    }
  });

  const templates = new MailTemplates(MAILS, undefined, { now: () => NOW });
  const mail = <V>(kind: string) => MAILS.find((m) => m.kind === kind) as Mail<V>;
  const to = (locale: string, name?: string) => ({ email: 'a@example.com', locale, name });
  const texts = {
    recoveryCodeUsedMessage: (name: string | undefined, left: number, locale: string) =>
      templates.compose(mail<{ left: number }>('recoveryCodeUsed'), to(locale, name), { left }),
    secondFactorFailuresMessage: (name: string | undefined, failures: number, locale: string) =>
      templates.compose(mail<{ failures: number }>('secondFactorFailures'), to(locale, name), { failures }),
    passwordResetMessage: (name: string | undefined, url: string, ttlMs: number, locale: string) =>
      templates.compose(mail<{ url: string; ttlMs: number }>('passwordReset'), to(locale, name), {
        url,
        ttlMs,
      }),
    passwordChangedMessage: (name: string | undefined, locale: string) =>
      templates.compose(mail<object>('passwordChanged'), to(locale, name), {}),
  };
  const lineWith = (text: string, needle: string) =>
    text.split('\n').find((line) => line.includes(needle)) ?? '';

  test('plural forms as each language writes them: none, one and several recovery codes left', () => {
    const expected = {
      en: [
        'you have no unused recovery codes left',
        'you have 1 unused recovery code left',
        'you have 2 unused recovery codes left',
      ],
      de: [
        'Sie haben keine unbenutzten Wiederherstellungscodes mehr',
        'Sie haben noch 1 unbenutzten Wiederherstellungscode',
        'Sie haben noch 2 unbenutzte Wiederherstellungscodes',
      ],
      fr: [
        'il ne vous reste aucun code de récupération inutilisé',
        'il vous reste 1 code de récupération inutilisé',
        'il vous reste 2 codes de récupération inutilisés',
      ],
      es: [
        'no te queda ningún código de recuperación sin usar',
        'te queda 1 código de recuperación sin usar',
        'te quedan 2 códigos de recuperación sin usar',
      ],
    };
    for (const language of LANGUAGES)
      for (const [left, phrase] of expected[language].entries()) {
        const mail = texts.recoveryCodeUsedMessage('Ana', left, language);
        assert.ok(mail.text.includes(phrase), `${language} ${left}: ${mail.text}`);
        assert.ok(mail.html.includes(phrase), `${language} ${left}: the HTML part says it too`);
      }
  });

  test("plural forms by CLDR's rules, not English's: French counts 0 and 1 as one", () => {
    // secondFactorFailures has no =0 branch: what `one` means is the language's.
    const one = (language: string, failures: number) =>
      lineWith(texts.secondFactorFailuresMessage(undefined, failures, language).text, `${failures}`);
    assert.match(one('fr', 0), /0 code erroné /);
    assert.match(one('fr', 1), /1 code erroné /);
    assert.match(one('fr', 5), /5 codes erronés d’affilée/);
    assert.match(one('en', 0), /0 wrong codes in a row/);
    assert.match(one('en', 1), /1 wrong code /);
    assert.match(one('de', 1), /1 falschen Code /);
    assert.match(one('de', 5), /5 falsche Codes hintereinander/);
    assert.match(one('es', 1), /1 código incorrecto /);
    assert.match(one('es', 5), /5 códigos incorrectos seguidos/);
  });

  test('durations in words of the language: 15 Minuten, 1 heure, 2 horas, 7 days', () => {
    const validity = (language: string, ms: number) =>
      texts.passwordResetMessage(undefined, 'https://id.example/reset-password#token=t', ms, language).text;
    assert.match(validity('de', 15 * 60_000), /ist 15 Minuten lang gültig/);
    assert.match(validity('de', 60 * 60_000), /ist 1 Stunde lang gültig/);
    assert.match(validity('fr', 60 * 60_000), /pendant 1\sheure\./);
    assert.match(validity('fr', 30 * 60_000), /pendant 30\sminutes\./);
    assert.match(validity('es', 120 * 60_000), /durante 2 horas\./);
    assert.match(validity('es', 1 * 60_000), /durante 1 minuto\./);
    assert.match(validity('en', 7 * 24 * 3600_000), /for 7 days\./);
    assert.match(validity('en', 90 * 60_000), /for 90 minutes\./);
  });

  test('dates for the language, in UTC and saying so; a regional variant writes them its own way', () => {
    const notice = (locale: string) => texts.passwordChangedMessage(undefined, locale).text;
    assert.match(notice('en'), /This happened on November 27, 2026 at 2:05 PM UTC\./);
    assert.match(notice('en-GB'), /This happened on 27 November 2026 at 14:05 UTC\./);
    assert.match(notice('de'), /Dies geschah am 27\. November 2026 um 14:05 UTC\./);
    assert.match(notice('de-AT'), /Dies geschah am 27\. November 2026 um 14:05 UTC\./);
    assert.match(notice('fr'), /Cela s’est produit le 27 novembre 2026 à 14:05 UTC\./);
    assert.match(notice('es'), /Ocurrió el 27 de noviembre de 2026 \(14:05 UTC\)\./);
    // A language without texts gets English, and English's dates, not Japanese ones in English words.
    assert.match(notice('ja'), /This happened on November 27, 2026 at 2:05 PM UTC\./);
  });

  test('every value is escaped in the HTML part, in every language, and the link is written out in full', () => {
    const url = 'https://id.example/reset-password#token=abc';
    for (const language of LANGUAGES) {
      const mail = texts.passwordResetMessage('<b>"Ana" & Co</b>', url, 1800_000, language);
      assert.ok(!mail.html.includes('<b>"Ana"'), mail.html);
      assert.ok(mail.html.includes('&lt;b&gt;&quot;Ana&quot; &amp; Co&lt;/b&gt;'), mail.html);
      assert.ok(mail.text.includes('<b>"Ana" & Co</b>'), 'the text part as typed');
      assert.ok(mail.text.includes(`\n${url}\n`), mail.text);
      assert.ok(mail.html.includes(`href="${url}"`) && mail.html.includes(`>${url}</p>`), mail.html);
      assert.match(mail.html, new RegExp(`<html lang="${language}" dir="ltr">`));
    }
  });
});

describe("the pages' texts", () => {
  const places = (text: string) => [...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
  test('every translation has the places ({name}) the English text has', () => {
    const all = PAGE_TEXTS as unknown as Record<string, Record<string, Record<string, string>>>;
    for (const language of LANGUAGES)
      for (const [group, english] of Object.entries(all.en!))
        for (const [key, text] of Object.entries(english)) {
          const translated = all[language]![group]![key]!;
          assert.equal(typeof translated, 'string', `${language} ${group}.${key}`);
          assert.deepEqual(places(translated), places(text), `${language} ${group}.${key}`);
        }
  });

  test('a template renders in every language with every place filled; a place without a text stops the start', () => {
    const page = new LocalizedPage(
      '<html lang="en"><h1>{{title}}</h1><script type="application/json" id="texts">{}</script>',
      ['common', 'verifyEmail'],
      PAGE_TEXTS,
    );
    assert.match(page.in('de'), /^<html lang="de"><h1>E-Mail-Adresse bestätigen<\/h1>/);
    const json = /id="texts">(.*)<\/script>/.exec(page.in('fr'))![1]!;
    assert.equal(JSON.parse(json).title, 'Confirmez votre adresse e-mail');
    assert.throws(() => new LocalizedPage('<p>{{noSuchText}}</p>', ['common'], PAGE_TEXTS), /noSuchText/);
  });
});
