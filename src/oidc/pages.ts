// The provider's own HTML: the sign-in and consent page's shell (its script does the rest), the
// error page, and the sign-out pages, in the browser's language (pages/i18n.ts). Usher's style and
// icon only, nothing from elsewhere; every value put in is escaped, and none of these pages runs
// inline script (the sign-in page's texts ride along as an inert JSON block).
import { escapeHtml, fill, LocalizedPage, type PageTextSet } from '../pages/index.ts';
import type { BuiltInLocale } from '../shared/locale.ts';
import { oidcPageTexts } from './page-texts.ts';

export { escapeHtml } from '../pages/index.ts';

function shell(lang: string, title: string, body: string, script?: string): string {
  return `<!doctype html>
<html lang="${lang}">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <meta name="robots" content="noindex">
  <title>${title}</title>
  <link rel="icon" href="/pages/icon.svg" type="image/svg+xml">
  <link rel="stylesheet" href="/pages/pages.css">
  <link rel="stylesheet" href="/pages/account.css">
  <link rel="stylesheet" href="/pages/interaction.css">${script ? `\n  <script type="application/json" id="texts">{}</script>\n  <script type="module" src="${script}"></script>` : ''}
</head>
<body>
  <main>
    <img class="mark" src="/pages/icon.svg" alt="" width="40" height="40">
${body}
  </main>
</body>
</html>
`;
}

/** The interaction page's template: its texts' keys in {{…}} (page-texts.ts, group interaction). */
const INTERACTION = shell(
  'en',
  '{{signIn}}',
  `    <h1 id="heading">{{signIn}}</h1>
    <p id="client-line" class="hint" hidden>{{toContinueBefore}}<strong id="client-name"></strong>{{toContinueAfter}}</p>
    <div id="message" class="message" role="status" aria-live="polite" hidden></div>
    <noscript><p class="message error">{{noscript}}</p></noscript>

    <form id="signin" method="post" novalidate hidden>
      <label for="email">{{email}}</label>
      <input id="email" name="email" type="email" autocomplete="username webauthn" maxlength="320" required>
      <label for="password">{{password}}</label>
      <input id="password" name="password" type="password" autocomplete="current-password" maxlength="4096" required>
      <div id="signin-code-field" hidden>
        <label for="signin-code">{{authenticatorCode}}</label>
        <input id="signin-code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" maxlength="32">
        <p class="hint">{{orRecoveryCode}}</p>
      </div>
      <button id="signin-submit" type="submit">{{signIn}}</button>
    </form>

    <div id="other-ways" hidden>
      <p class="or"><span>{{or}}</span></p>
      <button id="passkey" type="button" class="secondary" hidden>{{withPasskey}}</button>
      <ul id="providers" class="providers" aria-label="{{otherWays}}"></ul>
    </div>

    <form id="second-factor" method="post" novalidate hidden>
      <p>{{oneMoreStep}}</p>
      <label for="second-factor-code">{{authenticatorCode}}</label>
      <input id="second-factor-code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" maxlength="32" required>
      <p class="hint">{{orRecoveryCode}}</p>
      <button id="second-factor-submit" type="submit">{{continue}}</button>
    </form>

    <section id="consent" hidden aria-labelledby="heading">
      <p>{{asksToBefore}}<strong id="consent-client"></strong>{{asksToAfter}}</p>
      <ul id="consent-scopes" class="scopes"></ul>
      <p id="consent-who-line" class="hint" hidden>{{signedInAsBefore}}<span id="consent-who"></span>{{signedInAsAfter}}</p>
      <div class="row">
        <button id="allow" type="button">{{allow}}</button>
        <button id="deny" type="button" class="secondary">{{deny}}</button>
      </div>
    </section>

    <p id="cancel-line" class="cancel" hidden><button id="cancel" type="button" class="link">{{cancelToApp}}</button></p>`,
  '/pages/interaction.js',
);

/**
 * The page of an interaction, in every language: its script asks what to show (GET …/details) and
 * signs in through the JSON API. `texts`: every group (it takes pages/'s `common` with its own).
 */
export function interactionPage(texts: PageTextSet): LocalizedPage {
  return new LocalizedPage(INTERACTION, ['common', 'interaction'], texts);
}

/**
 * `description`: what went wrong (the provider's own words are English, like the API's);
 * `advice`: what the person can do, by default go back to the app (the app's request was at fault).
 */
export function errorPage(
  locale: BuiltInLocale,
  error: string,
  description: string | undefined,
  advice: 'startAgain' | 'signInAgain' = 'startAgain',
): string {
  const t = oidcPageTexts[locale].oidc;
  return shell(
    locale,
    escapeHtml(t.problemTitle),
    `    <h1>${escapeHtml(t.problemHeading)}</h1>
    <p class="message error" role="alert">${escapeHtml(description ?? t.invalidRequest)}</p>
    <p class="hint">${escapeHtml(t[advice])} ${fill(t.errorCode, { code: error })}</p>`,
  );
}

/** `form` is oidc-provider's own (its action and the xsrf token); the buttons submit it. */
export function logoutPage(locale: BuiltInLocale, form: string, client: string | undefined): string {
  const t = oidcPageTexts[locale].oidc;
  return shell(
    locale,
    escapeHtml(t.signOutTitle),
    `    <h1>${client ? fill(t.signOutOf, { client }) : escapeHtml(t.signOutQuestion)}</h1>
    <p class="hint">${escapeHtml(t.alsoSignedOut)}</p>
    ${form}
    <div class="row">
      <button autofocus type="submit" form="op.logoutForm" value="yes" name="logout">${escapeHtml(t.signOut)}</button>
      <button type="submit" form="op.logoutForm" class="secondary">${escapeHtml(t.staySignedIn)}</button>
    </div>`,
  );
}

export function loggedOutPage(locale: BuiltInLocale, client: string | undefined): string {
  const t = oidcPageTexts[locale].oidc;
  return shell(
    locale,
    escapeHtml(t.signedOutTitle),
    `    <h1>${escapeHtml(t.signedOutHeading)}</h1>
    <p class="hint">${client ? `${fill(t.signedOutOf, { client })} ` : ''}${escapeHtml(t.closePage)}</p>`,
  );
}
