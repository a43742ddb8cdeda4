// The provider's page (/oidc/interaction/{uid}): an app sent the person here to sign in through
// Usher. Signing in is Usher's JSON API with the session cookie (password with the TOTP step,
// a passkey, a provider); once signed in, the page reloads itself and the server finishes the
// app's sign-in from that session. Consent for a third-party app is asked here too. Text from the
// server only ever reaches the page through textContent.
import { lang, say, t, UNREACHABLE, waitText } from './link.js';

const $ = (id) => document.getElementById(id);
const message = $('message');
const base = location.pathname.replace(/\/+$/, '');

/** Calls the API: `{status, body, error, message, retryAfter, headers}`; status 0 when unreachable. */
async function api(method, path, body) {
  let response;
  try {
    response = await fetch(path, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    return { status: 0, body: null, error: '', message: '', retryAfter: 0, headers: new Headers() };
  }
  let json = null;
  try {
    json = await response.json();
  } catch {
    // no JSON body: the status says enough
  }
  const retryAfter = Number.parseInt(response.headers.get('retry-after') ?? '', 10);
  return {
    status: response.status,
    body: json,
    error: typeof json?.error === 'string' ? json.error : '',
    message: typeof json?.message === 'string' ? json.message : '',
    retryAfter: retryAfter > 0 ? retryAfter : 0,
    headers: response.headers,
  };
}

function problem(answer, what) {
  if (answer.status === 0) return UNREACHABLE;
  if (answer.status === 429) return t('tooMany', { when: waitText(answer.retryAfter) });
  if (answer.status === 400 && answer.error === 'INVALID_TOKEN') return t('expiredInteraction');
  // The API's messages are English: a page in another language says it in its own words.
  return lang === 'en' && answer.message ? answer.message : t('failed', { what: t(what) });
}

function busy(button, on) {
  button.disabled = on;
  button.setAttribute('aria-busy', on ? 'true' : 'false');
}

/** Signed in to Usher: the server now finishes the app's sign-in from the session. */
function signedIn() {
  location.replace(base);
}

/**
 * Goes where an answer of the provider says (the app, with its code or its error). The button
 * stays busy while the browser leaves: a second press would answer an interaction already done.
 */
function follow(answer, what, buttons) {
  if (answer.status === 200 && typeof answer.body?.location === 'string') {
    location.assign(answer.body.location);
    return;
  }
  for (const button of buttons) busy(button, false);
  say(message, 'error', problem(answer, what));
}

// ---- email and password, with the TOTP step ----------------------------------------------------

const signin = $('signin');
signin.addEventListener('submit', async (event) => {
  event.preventDefault();
  const button = $('signin-submit');
  const body = { email: $('email').value.trim(), password: $('password').value };
  const code = $('signin-code').value.trim();
  if (!$('signin-code-field').hidden && code) body.code = code;
  if (!body.email || !body.password) {
    say(message, 'error', t('enterEmailPassword'));
    return;
  }
  busy(button, true);
  const answer = await api('POST', '/api/signin', body);
  if (answer.status === 200) {
    // Busy until the page has reloaded: the server finishes the app's sign-in from here.
    $('password').value = '';
    signedIn();
    return;
  }
  busy(button, false);
  if (answer.headers.get('usher-second-factor') === 'totp') {
    $('signin-code-field').hidden = false;
    $('signin-code').focus();
    if (code) {
      $('signin-code').select();
      say(message, 'error', t('wrongCode'));
    } else say(message, 'info', t('enterCode'));
  } else if (answer.status === 401 || answer.status === 400) {
    say(message, 'error', t('wrongCredentials'));
  } else if (answer.status === 403) {
    say(message, 'error', lang === 'en' && answer.message ? answer.message : t('confirmEmailFirst'));
  } else {
    say(message, 'error', problem(answer, 'doingSignIn'));
  }
});

// ---- a passkey ---------------------------------------------------------------------------------

const bytes = (text) =>
  Uint8Array.from(atob(text.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
const text = (buffer) =>
  btoa(String.fromCharCode(...new Uint8Array(buffer)))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');

$('passkey').addEventListener('click', async () => {
  const button = $('passkey');
  busy(button, true);
  // Busy until the page has reloaded when the passkey signs in; free again otherwise.
  if (!(await passkeySignIn())) busy(button, false);
});

/** Signs in with a passkey; true when signed in (the page is reloading), false after saying why not. */
async function passkeySignIn() {
  const options = await api('POST', '/api/signin/passkey/options');
  if (options.status !== 200) {
    say(message, 'error', problem(options, 'doingPasskey'));
    return false;
  }
  const o = options.body;
  let credential;
  try {
    credential = await navigator.credentials.get({
      publicKey: {
        ...o,
        challenge: bytes(o.challenge),
        allowCredentials: (o.allowCredentials ?? []).map((c) => ({ ...c, id: bytes(c.id) })),
      },
    });
  } catch {
    credential = null;
  }
  if (!credential) {
    say(message, 'info', t('noPasskeyUsed'));
    return false;
  }
  const r = credential.response;
  const answer = await api('POST', '/api/signin/passkey', {
    credential: {
      id: credential.id,
      rawId: text(credential.rawId),
      type: credential.type,
      clientExtensionResults: credential.getClientExtensionResults(),
      authenticatorAttachment: credential.authenticatorAttachment ?? undefined,
      response: {
        clientDataJSON: text(r.clientDataJSON),
        authenticatorData: text(r.authenticatorData),
        signature: text(r.signature),
        userHandle: r.userHandle ? text(r.userHandle) : undefined,
      },
    },
  });
  if (answer.status === 200) {
    signedIn();
    return true;
  }
  if (answer.status === 401) say(message, 'error', t('passkeyFailed'));
  else say(message, 'error', problem(answer, 'doingPasskey'));
  return false;
}

// ---- providers ---------------------------------------------------------------------------------

async function showProviders() {
  const answer = await api('GET', '/api/oauth/providers');
  const list = $('providers');
  list.replaceChildren();
  for (const provider of Array.isArray(answer.body) ? answer.body : []) {
    const item = document.createElement('li');
    const link = document.createElement('a');
    link.className = 'button secondary';
    link.textContent = t('continueWith', { provider: provider.name });
    const start = new URLSearchParams({ redirectTo: base });
    link.href = `/api/oauth/${encodeURIComponent(provider.id)}/start?${start}`;
    item.append(link);
    list.append(item);
  }
}

// A provider sign-in came back: `?error=CODE`, or `#second-factor=<ticket>` when the account has TOTP.
const landing = {
  error: new URLSearchParams(location.search).get('error') ?? '',
  ticket: new URLSearchParams(location.hash.slice(1)).get('second-factor') ?? '',
};
if (location.search || location.hash) history.replaceState(null, '', base);

const LANDING_ERRORS = {
  OAUTH_DENIED: t('oauthDenied'),
  ACCOUNT_EXISTS: t('accountExists'),
  IDENTITY_TAKEN: t('identityTaken'),
  SIGNUP_CLOSED: t('signupClosed'),
  SIGNIN_FAILED: t('signinFailed'),
};

$('second-factor').addEventListener('submit', async (event) => {
  event.preventDefault();
  const code = $('second-factor-code').value.trim();
  if (!code) {
    say(message, 'error', t('enterCode'));
    return;
  }
  const button = $('second-factor-submit');
  busy(button, true);
  const answer = await api('POST', '/api/signin/second-factor', { ticket: landing.ticket, code });
  if (answer.status === 200) {
    signedIn();
    return;
  }
  busy(button, false);
  if (answer.headers.get('usher-second-factor') === 'totp') say(message, 'error', t('wrongCode'));
  else {
    say(message, 'error', t('ticketExpired'));
    $('second-factor').hidden = true;
    signin.hidden = false;
  }
});

// ---- consent and cancelling ----------------------------------------------------------------------

const SCOPE_TEXT = {
  openid: t('scopeOpenid'),
  profile: t('scopeProfile'),
  email: t('scopeEmail'),
  offline_access: t('scopeOfflineAccess'),
};

function scopeText(scope) {
  const hash = scope.indexOf('#');
  if (hash > 0) return t('scopeResource', { resource: scope.slice(0, hash), scope: scope.slice(hash + 1) });
  return Object.hasOwn(SCOPE_TEXT, scope) ? SCOPE_TEXT[scope] : scope;
}

/** Allow or Deny: both buttons wait for the answer, so only one of them is ever sent. */
async function decide(decision) {
  const buttons = [$('allow'), $('deny')];
  for (const button of buttons) busy(button, true);
  const answer = await api('POST', `${base}/consent`, { decision });
  follow(answer, 'doingAnswer', buttons);
}

$('allow').addEventListener('click', () => decide('allow'));
$('deny').addEventListener('click', () => decide('deny'));
$('cancel').addEventListener('click', async (event) => {
  const button = event.currentTarget;
  busy(button, true);
  const answer = await api('POST', `${base}/cancel`, {});
  follow(answer, 'doingCancel', [button]);
});

async function start() {
  const answer = await api('GET', `${base}/details`);
  if (answer.status !== 200) {
    say(message, 'error', problem(answer, 'doingLoad'));
    return;
  }
  const details = answer.body;
  if (details.prompt === 'consent') {
    // The app's name is in the heading and the question already; Deny is the way back.
    document.title = t('allowClient', { client: details.client.name });
    $('heading').textContent = t('allowClient', { client: details.client.name });
    $('consent-client').textContent = details.client.name;
    if (details.signedInAs) {
      $('consent-who').textContent = details.signedInAs;
      $('consent-who-line').hidden = false;
    }
    const list = $('consent-scopes');
    for (const scope of details.scopes) {
      const item = document.createElement('li');
      item.textContent = scopeText(scope);
      list.append(item);
    }
    $('consent').hidden = false;
    $('allow').focus();
    return;
  }
  $('client-name').textContent = details.client.name;
  $('client-line').hidden = false;
  $('cancel-line').hidden = false;
  if (landing.ticket) {
    $('second-factor').hidden = false;
    $('second-factor-code').focus();
    return;
  }
  if (landing.error)
    say(
      message,
      'error',
      Object.hasOwn(LANDING_ERRORS, landing.error) ? LANDING_ERRORS[landing.error] : t('landingFailed'),
    );
  signin.hidden = false;
  if (details.loginHint) $('email').value = details.loginHint;
  $('other-ways').hidden = false;
  $('passkey').hidden = !window.PublicKeyCredential;
  await showProviders();
  (details.loginHint ? $('password') : $('email')).focus();
}

start();
