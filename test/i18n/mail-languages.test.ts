// Mails in the user's language (CONTRACT "Sign-in by mail, languages, and users from other
// systems", "Languages"; issue 31), through the real server code, both stores and both profiles,
// received by a real SMTP server: the language a registration's Accept-Language picks (every way
// an account is made: POST /api/users, an admin's invitation, a provider's sign-up, the CLI) and
// the one a PUT sets; plural forms, durations and dates as each language writes them; a bad
// locale refused (400 VALIDATION_FAILED, nothing stored); the documented bodies unchanged.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Profile } from '../../src/config.ts';
import { as, staff } from '../admin/support.ts';
import { NO_THROTTLE, newUser, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { mailsTo, mailTo, waitForMails } from '../helpers/mail.ts';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.ts';
import { runProcess } from '../helpers/process.ts';
import { type ReceivedMail, startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { totpAt } from '../helpers/totp.ts';
import { Browser, listeningUsher, providerPerson, type Usher } from '../oauth/support.ts';

const PROFILES: readonly Profile[] = ['a', 'b'];
const PUBLIC_URL = 'https://id.usher.example';
const CLI = fileURLToPath(new URL('../../bin/usher.mjs', import.meta.url));
/** The user object of each profile, key for key: a locale changes neither. */
const USER_KEYS: Record<Profile, string[]> = {
  a: ['email', 'id', 'name'],
  b: ['createdAt', 'email', 'emailVerified', 'id', 'name'],
};

interface Language {
  locale: 'en' | 'de' | 'fr' | 'es';
  /** What a browser of this language sends, and what the account keeps of it. */
  acceptLanguage: string;
  kept: string;
  greeting: string;
  verifySubject: string;
  /** EMAIL_VERIFY_TTL_SECONDS (86400) as the language writes it. */
  oneDay: RegExp;
  changedSubject: string;
  resetSubject: string;
  /** The reset link's lifetime in the duration app of this language, as the language writes it. */
  resetTtlMinutes: number;
  resetValidity: RegExp;
  totpSubject: string;
  recoverySubject: string;
  /** 9 recovery codes left, after the first is used. */
  nineLeft: string;
  inviteSubject: string;
  sevenDays: RegExp;
}

const LANGUAGES: readonly Language[] = [
  {
    locale: 'en',
    acceptLanguage: 'en-GB,en;q=0.9',
    kept: 'en-GB',
    greeting: 'Hello,',
    verifySubject: 'Confirm your email address',
    oneDay: /works once, for 1 day\./,
    changedSubject: 'Your password was changed',
    resetSubject: 'Reset your password',
    resetTtlMinutes: 90,
    resetValidity: /It works once, for 90 minutes\./,
    totpSubject: 'Two-step sign-in was turned on',
    recoverySubject: 'A recovery code was used to sign in',
    nineLeft: 'you have 9 unused recovery codes left',
    inviteSubject: 'You are invited: choose your password',
    sevenDays: /for 7 days\./,
  },
  {
    locale: 'de',
    acceptLanguage: 'de-AT,de;q=0.9,en;q=0.5',
    kept: 'de-AT',
    greeting: 'Guten Tag,',
    verifySubject: 'Bestätigen Sie Ihre E-Mail-Adresse',
    oneDay: /ist 1 Tag lang gültig\./,
    changedSubject: 'Ihr Passwort wurde geändert',
    resetSubject: 'Setzen Sie Ihr Passwort zurück',
    resetTtlMinutes: 15,
    resetValidity: /ist 15 Minuten lang gültig\./,
    totpSubject: 'Die Zwei-Faktor-Authentifizierung wurde aktiviert',
    recoverySubject: 'Anmeldung mit einem Wiederherstellungscode',
    nineLeft: 'Sie haben noch 9 unbenutzte Wiederherstellungscodes',
    inviteSubject: 'Sie wurden eingeladen: Legen Sie Ihr Passwort fest',
    sevenDays: /ist 7 Tage lang gültig\./,
  },
  {
    locale: 'fr',
    acceptLanguage: 'fr-CA',
    kept: 'fr-CA',
    greeting: 'Bonjour,',
    verifySubject: 'Confirmez votre adresse e-mail',
    oneDay: /pendant 1\sjour\./,
    changedSubject: 'Votre mot de passe a été modifié',
    resetSubject: 'Réinitialisez votre mot de passe',
    resetTtlMinutes: 60,
    resetValidity: /pendant 1\sheure\./,
    totpSubject: 'La validation en deux étapes a été activée',
    recoverySubject: 'Un code de récupération a servi à vous connecter',
    nineLeft: 'il vous reste 9 codes de récupération inutilisés',
    inviteSubject: 'Invitation\u00a0: choisissez votre mot de passe',
    sevenDays: /pendant 7\sjours\./,
  },
  {
    locale: 'es',
    acceptLanguage: 'ja, es-419;q=0.8',
    kept: 'es-419',
    greeting: 'Hola:',
    verifySubject: 'Confirma tu dirección de correo electrónico',
    oneDay: /es válido durante 1 día\./,
    changedSubject: 'Se ha cambiado tu contraseña',
    resetSubject: 'Restablece tu contraseña',
    resetTtlMinutes: 120,
    resetValidity: /es válido durante 2 horas\./,
    totpSubject: 'Se ha activado la verificación en dos pasos',
    recoverySubject: 'Se ha usado un código de recuperación para iniciar sesión',
    nineLeft: 'te quedan 9 códigos de recuperación sin usar',
    inviteSubject: 'Te han invitado: elige tu contraseña',
    sevenDays: /es válido durante 7 días\./,
  },
];

/** A date as the language writes it in a mail (ICU's `long`), in UTC. */
const longDate = (locale: string, at: number) =>
  new Intl.DateTimeFormat(locale, { year: 'numeric', month: 'long', day: 'numeric', timeZone: 'UTC' }).format(
    at,
  );

describeEachStore('Mails in the user’s language', (store) => {
  let smtp: TestSmtp;
  let provider: TestOidcProvider;
  const apps = {} as Record<Profile, TestApp>;
  /** Per language, a profile B app whose reset links live `resetTtlMinutes`. */
  const timed = {} as Record<Language['locale'], TestApp>;
  let usher: Usher;

  before(async () => {
    smtp = await startSmtp();
    provider = await startOidcProvider();
    // Every app here shares one database, and a forgot-password ask is turned into mail by whichever
    // instance's delivery round comes first, with that instance's PASSWORD_RESET_TTL_SECONDS. No
    // polling: only a round woken by an app's own request runs, so the ask made on a `timed` app is
    // written by that app (its lifetime is the one the test reads).
    const mail = mailTo(smtp.url, { pollMs: 3_600_000 });
    const overrides = {
      publicUrl: PUBLIC_URL,
      mail,
      throttle: { ...NO_THROTTLE },
      encryptionKey: randomBytes(32),
    };
    for (const profile of PROFILES) apps[profile] = await startApp(store, profile, overrides);
    for (const language of LANGUAGES) {
      timed[language.locale] = await startApp(store, 'b', {
        ...overrides,
        tokens: { passwordResetTtlMs: language.resetTtlMinutes * 60_000, emailVerifyTtlMs: 86_400_000 },
      });
    }
    usher = await listeningUsher(store, 'b', provider, { overrides: { mail } });
  });
  after(async () => {
    for (const t of [...Object.values(apps), ...Object.values(timed)]) await t?.close();
    await usher?.t.close();
    await provider?.close();
    await smtp?.close();
  });

  const request = (t: TestApp, method: 'GET' | 'POST' | 'PUT', url: string, body?: unknown, headers = {}) =>
    t.inject({
      method,
      url,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const accountLocale = async (t: TestApp, token: string) => {
    const res = await request(t, 'GET', '/api/account', undefined, bearer(token));
    assert.equal(res.statusCode, 200, res.body);
    return res.json().locale as string;
  };
  const only = async (email: string, subject: string, count = 1): Promise<ReceivedMail> => {
    const mails = await waitForMails(
      smtp,
      email,
      new RegExp(`^${subject.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`),
      count,
    );
    return mails[count - 1]!;
  };

  for (const [index, language] of LANGUAGES.entries()) {
    const profile = PROFILES[index % 2]!;
    test(`[${profile}] ${language.locale}: Accept-Language "${language.acceptLanguage}" at registration: the account keeps ${language.kept}, and the verification mail is in ${language.locale}`, async () => {
      const t = apps[profile];
      const user = newUser();
      const res = await request(t, 'POST', '/api/users', user, {
        'accept-language': language.acceptLanguage,
      });
      assert.equal(res.statusCode, 201, res.body);
      assert.deepEqual(
        Object.keys(res.json()).sort(),
        USER_KEYS[profile],
        'the user object is the profile’s',
      );
      const mail = await only(user.email, language.verifySubject);
      assert.ok(mail.text.startsWith(`${language.greeting}\n`), mail.text);
      assert.match(mail.text, language.oneDay);
      assert.match(mail.text, new RegExp(`${PUBLIC_URL}/verify-email#token=`));
      assert.match(mail.html, new RegExp(`<html lang="${language.locale}"`));
      // What the account keeps: the browser's own tag, shown on GET /api/account only.
      const token = await signIn(t, user);
      assert.equal(await accountLocale(t, token), language.kept);
      const session = await request(t, 'GET', '/api/session', undefined, bearer(token));
      assert.deepEqual(Object.keys(session.json().user).sort(), USER_KEYS[profile]);
    });

    test(`[${profile}] ${language.locale}: a PUT sets the locale; the password notice (with its date) and the reset mail (with its lifetime) follow it`, async () => {
      const t = apps[profile];
      const user = newUser();
      // Registered in English (no Accept-Language at all), then changed.
      const registered = await request(t, 'POST', '/api/users', user);
      assert.equal(registered.statusCode, 201, registered.body);
      const token = await signIn(t, user);
      assert.equal(await accountLocale(t, token), 'en');
      const asked = language.locale === 'en' ? 'EN-us' : `${language.locale.toUpperCase()}`;
      const put = await request(
        t,
        'PUT',
        `/api/users/${registered.json().id}`,
        { email: user.email, name: user.name, locale: asked },
        bearer(token),
      );
      assert.equal(put.statusCode, 200, put.body);
      assert.deepEqual(
        Object.keys(put.json()).sort(),
        USER_KEYS[profile],
        'the answer is the profile’s user object',
      );
      const kept = language.locale === 'en' ? 'en-US' : language.locale;
      assert.equal(await accountLocale(t, token), kept, 'stored in its canonical form');

      // A PUT without locale keeps it.
      const renamed = await request(
        t,
        'PUT',
        `/api/users/${registered.json().id}`,
        { email: user.email, name: `${user.name} Jr` },
        bearer(token),
      );
      assert.equal(renamed.statusCode, 200, renamed.body);
      assert.equal(await accountLocale(t, token), kept);

      const before = Date.now();
      const changed = await request(
        t,
        'PUT',
        `/api/users/${registered.json().id}`,
        {
          email: user.email,
          name: `${user.name} Jr`,
          password: `${user.password}-new`,
          currentPassword: user.password,
        },
        bearer(token),
      );
      assert.equal(changed.statusCode, 200, changed.body);
      const after = Date.now();
      const notice = await only(user.email, language.changedSubject);
      const dates = new Set([longDate(kept, before), longDate(kept, after)]);
      assert.ok(
        [...dates].some((date) => notice.text.includes(date)),
        `a date like ${[...dates].join(' or ')} in: ${notice.text}`,
      );
      assert.match(notice.text, /\d{1,2}:\d{2}(\s?[AP]M)? UTC/, 'the time, saying it is UTC');

      const forgot = await timed[language.locale].post('/api/password/forgot', { email: user.email });
      assert.equal(forgot.statusCode, 202, forgot.body);
      const reset = await only(user.email, language.resetSubject);
      assert.match(reset.text, language.resetValidity);
    });

    test(`[${profile}] ${language.locale}: two-step sign-in's notices, and the plural of the recovery codes left`, async () => {
      const t = apps[profile];
      const user = newUser();
      const registered = await request(t, 'POST', '/api/users', { ...user, locale: language.locale });
      assert.equal(registered.statusCode, 201, registered.body);
      const token = await signIn(t, user);
      const setup = await request(t, 'POST', '/api/mfa/totp', { password: user.password }, bearer(token));
      assert.equal(setup.statusCode, 200, setup.body);
      const confirmed = await request(
        t,
        'POST',
        '/api/mfa/totp/confirm',
        { code: totpAt(setup.json().secret, Date.now()) },
        bearer(token),
      );
      assert.equal(confirmed.statusCode, 200, confirmed.body);
      await only(user.email, language.totpSubject);
      const [code] = confirmed.json().recoveryCodes as string[];
      const signin = await t.post('/api/signin', { email: user.email, password: user.password, code });
      assert.equal(signin.statusCode, 200, signin.body);
      const used = await only(user.email, language.recoverySubject);
      assert.ok(used.text.includes(language.nineLeft), used.text);
    });
  }

  for (const profile of PROFILES) {
    test(`[${profile}] a bad locale is 400 VALIDATION_FAILED naming locale, and nothing is stored: registration and PUT`, async () => {
      const t = apps[profile];
      for (const locale of [
        'not a tag',
        '',
        'x-private',
        'de_DE',
        'a'.repeat(65),
        'b'.repeat(300),
        42,
        null,
      ]) {
        const user = newUser();
        const res = await request(t, 'POST', '/api/users', { ...user, locale });
        assert.equal(res.statusCode, 400, `${JSON.stringify(locale)}: ${res.body}`);
        assert.equal(res.json().error, 'VALIDATION_FAILED');
        assert.match(res.json().message, /^locale\b/, res.json().message);
        assert.deepEqual(Object.keys(res.json()).sort(), ['error', 'message']);
        const again = await request(t, 'POST', '/api/users', user);
        assert.equal(
          again.statusCode,
          201,
          `the email was not taken by the refused registration: ${again.body}`,
        );
      }
      const user = newUser();
      const registered = await request(t, 'POST', '/api/users', { ...user, locale: 'fr' });
      const token = await signIn(t, user);
      for (const locale of ['not a tag', '*', 'c'.repeat(65), 7]) {
        const res = await request(
          t,
          'PUT',
          `/api/users/${registered.json().id}`,
          { email: user.email, name: 'Renamed', locale },
          bearer(token),
        );
        assert.equal(res.statusCode, 400, res.body);
        assert.equal(res.json().error, 'VALIDATION_FAILED');
        assert.match(res.json().message, /^locale\b/);
      }
      assert.equal(await accountLocale(t, token), 'fr', 'the locale is as it was');
      const shown = await request(t, 'GET', '/api/session', undefined, bearer(token));
      assert.equal(shown.json().user.name, user.name, 'and nothing else of the PUT was written');
    });

    test(`[${profile}] an admin's invitation: in the locale given, else in the inviting browser's language; a bad one is 400 and invites nobody`, async () => {
      const t = apps[profile];
      const admin = await staff(t, store, 'admin');
      const spanish = `invitee.${randomBytes(4).toString('hex')}@example.com`;
      const res = await as(t, admin.token).post('/api/admin/users', {
        email: spanish,
        name: 'Inés',
        locale: 'es-MX',
      });
      assert.equal(res.statusCode, 201, res.body);
      const es = LANGUAGES.find((l) => l.locale === 'es')!;
      const mail = await only(spanish, es.inviteSubject);
      assert.ok(mail.text.startsWith('Hola, Inés:\n'), mail.text);
      assert.match(mail.text, es.sevenDays);

      const french = `invitee.${randomBytes(4).toString('hex')}@example.com`;
      const byBrowser = await t.inject({
        method: 'POST',
        url: '/api/admin/users',
        headers: {
          authorization: `Bearer ${admin.token}`,
          'content-type': 'application/json',
          'accept-language': 'fr-BE, en;q=0.5',
        },
        payload: JSON.stringify({ email: french, name: 'Élise' }),
      });
      assert.equal(byBrowser.statusCode, 201, byBrowser.body);
      const fr = LANGUAGES.find((l) => l.locale === 'fr')!;
      assert.match((await only(french, fr.inviteSubject)).text, fr.sevenDays);

      const nobody = `invitee.${randomBytes(4).toString('hex')}@example.com`;
      const bad = await as(t, admin.token).post('/api/admin/users', {
        email: nobody,
        name: 'Nobody',
        locale: 'no such tag',
      });
      assert.equal(bad.statusCode, 400, bad.body);
      assert.equal(bad.json().error, 'VALIDATION_FAILED');
      assert.match(bad.json().message, /^locale: /);
      const retry = await as(t, admin.token).post('/api/admin/users', { email: nobody, name: 'Nobody' });
      assert.equal(retry.statusCode, 201, 'the refused invitation made no account');
    });
  }

  test("a provider's sign-up keeps the browser's language: its verification mail is in it", async () => {
    const person = providerPerson(provider, { email_verified: false });
    const browser = new Browser();
    const start = await browser.start(usher, { redirectTo: '/account' });
    assert.equal(start.status, 302, await start.text());
    const result = await provider.authorize(start.headers.get('location')!, {
      login: person.login,
      jar: browser.jar,
    });
    const callback = await browser.get(result.location, { 'accept-language': 'de-CH, en;q=0.3' });
    assert.equal(callback.status, 303, await callback.text());
    const de = LANGUAGES.find((l) => l.locale === 'de')!;
    const mail = await only(person.email!, de.verifySubject);
    assert.match(mail.text, de.oneDay);
  });

  test('`usher users add --locale` keeps the locale; its verification mail is written in it; a bad one stops before anything', async () => {
    const user = newUser();
    const env = { DATABASE_URL: store.url };
    const run = await runProcess(
      process.execPath,
      [CLI, 'users', 'add', '--email', user.email, '--name', user.name, '--locale', 'fr-ca'],
      env,
      `${user.password}\n`,
    );
    assert.equal(run.code, 0, run.stderr);
    // The CLI records the mail; an app on the same database sends it at its next poll (the apps of
    // this file do not poll: see \`before\`).
    const fr = LANGUAGES.find((l) => l.locale === 'fr')!;
    const poller = await startApp(store, 'b', {
      publicUrl: PUBLIC_URL,
      mail: mailTo(smtp.url, { pollMs: 100 }),
    });
    try {
      await only(user.email, fr.verifySubject);
    } finally {
      await poller.close();
    }
    const token = await signIn(apps.b, user);
    assert.equal(await accountLocale(apps.b, token), 'fr-CA');

    const other = newUser();
    const bad = await runProcess(
      process.execPath,
      [CLI, 'users', 'add', '--email', other.email, '--name', other.name, '--locale', 'fr_CA'],
      env,
      `${other.password}\n`,
    );
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /locale: must be a BCP 47 language tag/);
    assert.equal(
      (await apps.b.post('/api/signin', { email: other.email, password: other.password })).statusCode,
      401,
    );
    assert.equal(mailsTo(smtp, other.email).length, 0);
  });
});
