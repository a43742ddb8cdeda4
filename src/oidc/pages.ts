// The provider's own HTML: the sign-in and consent page's shell (its script does the rest), the
// error page, and the sign-out pages. Usher's style and icon only, nothing from elsewhere; every
// value put in is escaped, and none of these pages runs inline script.

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};
export const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);

function shell(title: string, body: string, script?: string): string {
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <meta name="robots" content="noindex">
  <title>${escapeHtml(title)}</title>
  <link rel="icon" href="/pages/icon.svg" type="image/svg+xml">
  <link rel="stylesheet" href="/pages/pages.css">
  <link rel="stylesheet" href="/pages/account.css">
  <link rel="stylesheet" href="/pages/interaction.css">${script ? `\n  <script type="module" src="${script}"></script>` : ''}
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

/** The page of an interaction: its script asks what to show (GET …/details) and signs in through the JSON API. */
export function interactionPage(): string {
  return shell(
    'Sign in',
    `    <h1 id="heading">Sign in</h1>
    <p id="client-line" class="hint" hidden>to continue to <strong id="client-name"></strong></p>
    <div id="message" class="message" role="status" aria-live="polite" hidden></div>
    <noscript><p class="message error">This page needs JavaScript to sign you in.</p></noscript>

    <form id="signin" method="post" novalidate hidden>
      <label for="email">Email</label>
      <input id="email" name="email" type="email" autocomplete="username webauthn" maxlength="320" required>
      <label for="password">Password</label>
      <input id="password" name="password" type="password" autocomplete="current-password" maxlength="4096" required>
      <div id="signin-code-field" hidden>
        <label for="signin-code">Code from your authenticator app</label>
        <input id="signin-code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" maxlength="32">
        <p class="hint">Or one of your recovery codes.</p>
      </div>
      <button id="signin-submit" type="submit">Sign in</button>
    </form>

    <div id="other-ways" hidden>
      <p class="or"><span>or</span></p>
      <button id="passkey" type="button" class="secondary" hidden>Sign in with a passkey</button>
      <ul id="providers" class="providers" aria-label="Other ways to sign in"></ul>
    </div>

    <form id="second-factor" method="post" novalidate hidden>
      <p>One more step: your account has two-step sign-in.</p>
      <label for="second-factor-code">Code from your authenticator app</label>
      <input id="second-factor-code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" maxlength="32" required>
      <p class="hint">Or one of your recovery codes.</p>
      <button id="second-factor-submit" type="submit">Continue</button>
    </form>

    <section id="consent" hidden aria-labelledby="heading">
      <p><strong id="consent-client"></strong> asks to:</p>
      <ul id="consent-scopes" class="scopes"></ul>
      <p id="consent-who-line" class="hint" hidden>Signed in as <span id="consent-who"></span>.</p>
      <div class="row">
        <button id="allow" type="button">Allow</button>
        <button id="deny" type="button" class="secondary">Deny</button>
      </div>
    </section>

    <p id="cancel-line" class="cancel" hidden><button id="cancel" type="button" class="link">Cancel and go back to the app</button></p>`,
    '/pages/interaction.js',
  );
}

/** `advice`: what the person can do; by default, go back to the app (the app's request was at fault). */
export function errorPage(
  error: string,
  description: string | undefined,
  advice = 'Go back to the app and start again.',
): string {
  return shell(
    'Sign-in problem',
    `    <h1>This sign-in cannot go on</h1>
    <p class="message error" role="alert">${escapeHtml(description ?? 'The request was not valid.')}</p>
    <p class="hint">${escapeHtml(advice)} (Error code: ${escapeHtml(error)})</p>`,
  );
}

/** `form` is oidc-provider's own (its action and the xsrf token); the buttons submit it. */
export function logoutPage(form: string, client: string | undefined): string {
  return shell(
    'Sign out',
    `    <h1>Sign out${client ? ` of ${escapeHtml(client)}` : ''}?</h1>
    <p class="hint">You are also signed out of your account here.</p>
    ${form}
    <div class="row">
      <button autofocus type="submit" form="op.logoutForm" value="yes" name="logout">Sign out</button>
      <button type="submit" form="op.logoutForm" class="secondary">Stay signed in</button>
    </div>`,
  );
}

export function loggedOutPage(client: string | undefined): string {
  return shell(
    'Signed out',
    `    <h1>You are signed out</h1>
    <p class="hint">${client ? `You have signed out of ${escapeHtml(client)}. ` : ''}You can close this page.</p>`,
  );
}
