// Page texts per feature (issue 41): pages/ keeps `common` and the account page's texts and
// composes the groups each feature declares (Feature.pageTexts), once, at start. A group declared
// twice stops the start; a page asking for a group no feature declares does not compile, and one
// whose feature is not served stops the start when the page is rendered.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { AnyFeature } from '../../src/feature.ts';
import { FEATURES, featuresOf } from '../../src/features.ts';
import { composePageTexts, LocalizedPage, type PageTextSet, type TextGroup } from '../../src/pages/i18n.ts';
import { BUILT_IN_LOCALES } from '../../src/shared/locale.ts';
import { startApp } from '../helpers/app.ts';
import { freshDatabaseUrl } from '../helpers/stores.ts';

const TEMPLATE = '<html lang="en"><h1>{{title}}</h1><script type="application/json" id="texts">{}</script>';

/** A feature that declares `group` again, with the texts it has already (so only the name collides). */
function declaringAgain(name: string, group: TextGroup, texts: PageTextSet): AnyFeature {
  const again = (locale: (typeof BUILT_IN_LOCALES)[number]) => ({ [group]: texts[locale][group] });
  return { name, pageTexts: { en: again('en'), de: again('de'), fr: again('fr'), es: again('es') } };
}

describe('page texts per feature', () => {
  const texts = composePageTexts(featuresOf(FEATURES));

  test("each group has its owner's texts in every language, key for key like the English", () => {
    const owners: Record<string, readonly string[]> = { pages: ['common', 'account'] };
    for (const feature of featuresOf(FEATURES))
      if (feature.pageTexts) owners[feature.name] = Object.keys(feature.pageTexts.en);
    assert.deepEqual(owners, {
      pages: ['common', 'account'],
      'mail-signin': ['signinEmailLink'],
      oidc: ['interaction', 'oidc'],
      recovery: ['resetPassword', 'verifyEmail'],
    });
    const groups = Object.values(owners).flat().sort();
    for (const locale of BUILT_IN_LOCALES) {
      assert.deepEqual(Object.keys(texts[locale]).sort(), groups, locale);
      for (const group of groups)
        assert.deepEqual(
          Object.keys(texts[locale][group as TextGroup]),
          Object.keys(texts.en[group as TextGroup]),
          `${locale} ${group}`,
        );
    }
  });

  test('a group declared twice is refused, naming both owners', () => {
    assert.throws(
      () => composePageTexts([...featuresOf(FEATURES), declaringAgain('example', 'interaction', texts)]),
      /the page texts "interaction" are declared twice: by oidc and by example/,
    );
    assert.throws(
      () => composePageTexts([...featuresOf(FEATURES), declaringAgain('example', 'common', texts)]),
      /the page texts "common" are declared twice: by pages and by example/,
    );
  });

  test('a group declared twice stops the start', async () => {
    const store = await freshDatabaseUrl('sqlite');
    try {
      await assert.rejects(
        startApp(
          { kind: 'sqlite', url: store.url },
          'a',
          {},
          {
            features: FEATURES.with(declaringAgain('example', 'resetPassword', texts)),
          },
        ),
        /the page texts "resetPassword" are declared twice: by recovery and by example/,
      );
    } finally {
      await store.drop();
    }
  });

  test('a page asking for a group no feature declares does not compile; one whose feature is not served stops the start', () => {
    assert.throws(
      // @ts-expect-error: 'noSuchGroup' is not a TextGroup
      () => new LocalizedPage(TEMPLATE, ['common', 'noSuchGroup'], texts),
      /no feature served declares the page texts "noSuchGroup"/,
    );
    const withoutRecovery = composePageTexts(
      featuresOf(FEATURES).filter((feature) => feature.name !== 'recovery'),
    );
    assert.throws(
      () => new LocalizedPage(TEMPLATE, ['common', 'verifyEmail'], withoutRecovery),
      /no feature served declares the page texts "verifyEmail"/,
    );
    assert.match(
      new LocalizedPage(TEMPLATE, ['common', 'verifyEmail'], texts).in('de'),
      /<h1>E-Mail-Adresse bestätigen<\/h1>/,
    );
  });
});
