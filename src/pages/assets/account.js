// The account page: who is signed in, their sessions, two-step sign-in (TOTP), passkeys and linked
// accounts (sign in with a provider), all through Usher's JSON API with the session cookie. A
// reference for teams who build their own page: every call is a plain fetch (but a provider's start,
// which is a navigation), and text from the API only ever reaches the page through textContent.
import { lang, say, t, UNREACHABLE, waitText } from './link.js';

const $ = (id) => document.getElementById(id);
const message = $('message');

/**
 * Calls the API and reads the answer as `{status, body, error, message, retryAfter, headers}`;
 * status 0 when the server could not be reached. Never throws.
 */
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
    // 204, or a body that is not JSON (a proxy's error page): the status says enough.
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

/** What went wrong, in words, for an answer that was not a success. */
function problem(answer, what, values = {}) {
  if (answer.status === 0) return UNREACHABLE;
  if (answer.status === 429) return t('tooMany', { when: waitText(answer.retryAfter) });
  const failed = t('failed', { what: t(what, values) });
  if (answer.status >= 500 && answer.status !== 503) return failed;
  return lang === 'en' && answer.message ? answer.message : failed;
}

const when = new Intl.DateTimeFormat(lang, { dateStyle: 'medium', timeStyle: 'short' });
const date = (iso) => when.format(new Date(iso));

/** "Chrome on Android" from a User-Agent header; the header itself when it names no known browser. */
function deviceName(userAgent) {
  if (!userAgent) return t('unknownDevice');
  const browser = [
    [/Edg\//, 'Edge'],
    [/Firefox\//, 'Firefox'],
    [/Chrome\/|CriOS\//, 'Chrome'],
    [/Safari\//, 'Safari'],
  ].find(([pattern]) => pattern.test(userAgent))?.[1];
  const system = [
    [/Android/, 'Android'],
    [/iPhone/, 'iPhone'],
    [/iPad/, 'iPad'],
    [/Windows/, 'Windows'],
    [/Mac OS X|Macintosh/, 'macOS'],
    [/Linux/, 'Linux'],
  ].find(([pattern]) => pattern.test(userAgent))?.[1];
  if (!browser) return userAgent.slice(0, 80);
  return system ? t('browserOn', { browser, system }) : browser;
}

/** An element with text (never HTML) and an optional class. */
function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

function busy(button, on) {
  button.disabled = on;
}

// ---- signing in ------------------------------------------------------------------------------

const signin = $('signin');

/** The signed-out views: the sign-in form, a new account, or a reset link by mail. */
const DOORS = { signin: 'signIn', signup: 'createAccount', forgot: 'forgotPassword' };

function showDoor(door) {
  $('account').hidden = true;
  endSecondFactor();
  for (const id of Object.keys(DOORS)) $(id).hidden = id !== door;
  showProviders();
  $('signin-passkey').hidden = !window.PublicKeyCredential;
  document.title = t(DOORS[door]);
  $('heading').textContent = t(DOORS[door]);
  const first = { signin: 'email', signup: 'signup-name', forgot: 'forgot-email' }[door];
  $(first).focus();
}

function showSignin() {
  showDoor('signin');
}

// The links between the doors: the page shows the other form in place (an app may also link to
// /account#signup or /account#forgot, which start() reads).
$('show-signup').addEventListener('click', (event) => {
  event.preventDefault();
  message.hidden = true;
  showDoor('signup');
});
$('show-forgot').addEventListener('click', (event) => {
  event.preventDefault();
  message.hidden = true;
  // The email typed for signing in is the one a reset link is most likely wanted for.
  $('forgot-email').value = $('email').value.trim();
  showDoor('forgot');
});
for (const link of document.querySelectorAll('.show-signin')) {
  link.addEventListener('click', (event) => {
    event.preventDefault();
    message.hidden = true;
    showSignin();
  });
}

/** The rule the API gave for a field ("password: must be…") in the page's words. */
function fieldProblem(answer, field, key) {
  return answer.error === 'VALIDATION_FAILED' && answer.message.startsWith(`${field}:`)
    ? lang === 'en'
      ? answer.message
      : t(key)
    : '';
}

$('signup').addEventListener('submit', async (event) => {
  event.preventDefault();
  const body = {
    name: $('signup-name').value.trim(),
    email: $('signup-email').value.trim(),
    password: $('signup-password').value,
  };
  if (!body.name || !body.email || !body.password) {
    say(message, 'error', t('enterSignupFields'));
    return;
  }
  const button = $('signup-submit');
  busy(button, true);
  const answer = await api('POST', '/api/users', body);
  if (answer.status !== 201) {
    busy(button, false);
    const text =
      answer.status === 409
        ? t('emailTaken')
        : fieldProblem(answer, 'password', 'passwordRefused') ||
          fieldProblem(answer, 'email', 'emailRefused') ||
          problem(answer, 'doingSignUp');
    say(message, 'error', text);
    return;
  }
  // Registered: signed in with the same email and password, as the next thing anyone would do.
  const signedIn = await api('POST', '/api/signin', { email: body.email, password: body.password });
  busy(button, false);
  $('signup-password').value = '';
  if (signedIn.status === 200) {
    await load();
    say(message, 'ok', t('accountCreated'));
  } else {
    // REQUIRE_VERIFIED_EMAIL: the address first.
    $('email').value = body.email;
    showSignin();
    say(message, 'info', t('confirmBeforeSignIn'));
  }
});

$('forgot').addEventListener('submit', async (event) => {
  event.preventDefault();
  const email = $('forgot-email').value.trim();
  if (!email) {
    say(message, 'error', t('enterEmail'));
    return;
  }
  const button = $('forgot-submit');
  busy(button, true);
  const answer = await api('POST', '/api/password/forgot', { email });
  busy(button, false);
  // 202 whether or not the email has an account: the page cannot say more than the API does.
  if (answer.status === 202) say(message, 'ok', t('resetLinkSent', { email }));
  else say(message, 'error', fieldProblem(answer, 'email', 'emailRefused') || problem(answer, 'doingForgot'));
});

// ---- a passkey sign-in -------------------------------------------------------------------------

$('signin-passkey').addEventListener('click', async () => {
  const button = $('signin-passkey');
  busy(button, true);
  try {
    const options = await api('POST', '/api/signin/passkey/options');
    if (options.status !== 200) {
      say(message, 'error', problem(options, 'doingPasskey'));
      return;
    }
    const o = options.body;
    let credential = null;
    try {
      credential = await navigator.credentials.get({
        publicKey: {
          ...o,
          challenge: toBytes(o.challenge),
          allowCredentials: (o.allowCredentials ?? []).map((c) => ({ ...c, id: toBytes(c.id) })),
        },
      });
    } catch {
      // Cancelled, or no passkey for this site on the device.
    }
    if (!credential) {
      say(message, 'info', t('noPasskeyUsed'));
      return;
    }
    const r = credential.response;
    const answer = await api('POST', '/api/signin/passkey', {
      credential: {
        id: credential.id,
        rawId: toText(credential.rawId),
        type: credential.type,
        clientExtensionResults: credential.getClientExtensionResults(),
        authenticatorAttachment: credential.authenticatorAttachment ?? undefined,
        response: {
          clientDataJSON: toText(r.clientDataJSON),
          authenticatorData: toText(r.authenticatorData),
          signature: toText(r.signature),
          userHandle: r.userHandle ? toText(r.userHandle) : undefined,
        },
      },
    });
    if (answer.status === 200) {
      message.hidden = true;
      await load();
    } else if (answer.status === 401) {
      say(message, 'error', t('passkeyFailed'));
    } else {
      say(message, 'error', problem(answer, 'doingPasskey'));
    }
  } finally {
    busy(button, false);
  }
});

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
  busy(button, false);
  if (answer.status === 200) {
    $('password').value = '';
    $('signin-code').value = '';
    $('signin-code-field').hidden = true;
    message.hidden = true;
    await load();
  } else if (answer.headers.get('usher-second-factor') === 'totp') {
    $('signin-code-field').hidden = false;
    $('signin-code').focus();
    say(message, 'info', code ? t('wrongCode') : t('enterCode'));
  } else if (answer.status === 401 || answer.status === 400) {
    say(message, 'error', t('wrongCredentials'));
  } else {
    say(message, 'error', problem(answer, 'doingSignIn'));
  }
});

// ---- the account -------------------------------------------------------------------------------

/** Shows the account, or the sign-in form: true when signed in, false when not, undefined on a failure. */
async function load() {
  const answer = await api('GET', '/api/session');
  if (answer.status === 401) {
    showSignin();
    return false;
  }
  if (answer.status !== 200) {
    say(message, 'error', problem(answer, 'doingLoadAccount'));
    return undefined;
  }
  const { user } = answer.body;
  endSecondFactor();
  for (const id of Object.keys(DOORS)) $(id).hidden = true;
  showProviders();
  document.title = t('yourAccount');
  $('heading').textContent = t('yourAccount');
  $('who-name').textContent = user.name;
  $('who-email').textContent = user.email;
  const verified = $('who-verified');
  // Profile A's user object has no emailVerified: then nothing is claimed either way.
  verified.hidden = typeof user.emailVerified !== 'boolean';
  verified.textContent = user.emailVerified ? t('verified') : t('notVerified');
  verified.className = user.emailVerified ? 'badge ok' : 'badge warn';
  $('verify-resend').hidden = user.emailVerified !== false;
  $('who-message').hidden = true;
  $('account').hidden = false;
  me = user;
  await Promise.all([loadSessions(), loadPasskeys(), loadIdentities()]);
  return !$('account').hidden;
}

// ---- sessions ----------------------------------------------------------------------------------

async function loadSessions() {
  const list = $('sessions');
  const answer = await api('GET', '/api/sessions');
  if (answer.status === 401) return showSignin();
  if (answer.status !== 200) {
    say($('sessions-message'), 'error', problem(answer, 'doingListSessions'));
    return;
  }
  list.replaceChildren(
    ...answer.body.map((session) => {
      const item = el('li', undefined, 'item');
      const text = el('div', undefined, 'item-text');
      const title = el('p', deviceName(session.userAgent), 'item-title');
      if (session.userAgent) title.title = session.userAgent;
      if (session.current) title.append(' ', el('span', t('thisDevice'), 'badge ok'));
      text.append(
        title,
        el('p', t('sessionSignedIn', { date: date(session.createdAt) }), 'item-detail'),
        el('p', t('sessionLastSeen', { date: date(session.lastSeenAt) }), 'item-detail'),
      );
      const button = el('button', t('signOut'), 'secondary small');
      button.type = 'button';
      button.addEventListener('click', () => endSession(session, button));
      item.append(text, button);
      return item;
    }),
  );
}

async function endSession(session, button) {
  busy(button, true);
  const answer = await api('DELETE', `/api/sessions/${encodeURIComponent(session.id)}`);
  busy(button, false);
  if (answer.status === 204 && session.current) {
    say(message, 'ok', t('signedOut'));
    showSignin();
  } else if (answer.status === 204 || answer.status === 404) {
    say($('sessions-message'), 'ok', t('sessionSignedOut'));
    await loadSessions();
  } else if (answer.status === 401) {
    showSignin();
  } else {
    say($('sessions-message'), 'error', problem(answer, 'doingSignOut'));
  }
}

// ---- two-step sign-in (TOTP) -------------------------------------------------------------------

const totpMessage = $('totp-message');
let qrUrl = '';

/** The QR code of `text`, drawn by Usher (POST /account/qr) and shown from a blob: URL. */
async function showQr(text) {
  const img = $('totp-qr');
  if (qrUrl) URL.revokeObjectURL(qrUrl);
  qrUrl = '';
  img.hidden = true;
  try {
    const response = await fetch('/account/qr', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text }),
    });
    if (!response.ok) return;
    qrUrl = URL.createObjectURL(await response.blob());
    img.src = qrUrl;
    img.hidden = false;
  } catch {
    // No QR code: the key and the link are shown as text all the same.
  }
}

function hideSetup() {
  $('totp-setup').hidden = true;
  $('totp-password').hidden = false;
  $('totp-secret').textContent = '';
  $('totp-uri').textContent = '';
  if (qrUrl) URL.revokeObjectURL(qrUrl);
  qrUrl = '';
  $('totp-qr').removeAttribute('src');
}

/** Says whether TOTP is in force, and offers only the button that changes that. */
function showTotpState(on) {
  const badge = $('totp-state-badge');
  badge.textContent = on ? t('totpStateOn') : t('totpStateOff');
  badge.className = on ? 'badge ok' : 'badge';
  $('totp-on').hidden = on;
  $('totp-off').hidden = !on;
}

$('totp-password').addEventListener('submit', async (event) => {
  event.preventDefault();
  const turnOn = event.submitter?.value !== 'off';
  const password = $('totp-pass').value;
  if (!password) {
    say(totpMessage, 'error', t('enterPasswordFirst'));
    return;
  }
  const button = turnOn ? $('totp-on') : $('totp-off');
  busy(button, true);
  const answer = await api(turnOn ? 'POST' : 'DELETE', '/api/mfa/totp', { password });
  busy(button, false);
  if (answer.status === 401) return showSignin();
  if (answer.error === 'VALIDATION_FAILED' && answer.message.startsWith('password')) {
    say(totpMessage, 'error', t('wrongPassword'));
    return;
  }
  $('totp-pass').value = '';
  $('totp-codes').hidden = true;
  if (!turnOn) {
    hideSetup();
    if (answer.status === 204) {
      showTotpState(false);
      say(totpMessage, 'ok', t('totpIsOff'));
    } else {
      say(totpMessage, 'error', problem(answer, 'doingTurnOff'));
    }
    return;
  }
  if (answer.status === 409) {
    showTotpState(true);
    say(totpMessage, 'info', t('totpAlreadyOn'));
  } else if (answer.status === 200) {
    totpMessage.hidden = true;
    $('totp-secret').textContent = answer.body.secret;
    $('totp-uri').textContent = answer.body.uri;
    $('totp-setup').hidden = false;
    // One step at a time: the password form comes back once this set-up is confirmed or cancelled.
    $('totp-password').hidden = true;
    await showQr(answer.body.uri);
    $('totp-code').focus();
  } else {
    say(totpMessage, 'error', problem(answer, 'doingTurnOn'));
  }
});

$('totp-confirm').addEventListener('submit', async (event) => {
  event.preventDefault();
  const code = $('totp-code').value.replace(/\s/g, '');
  if (!/^\d{6}$/.test(code)) {
    say(totpMessage, 'error', t('enterSixDigits'));
    return;
  }
  const button = $('totp-confirm-submit');
  busy(button, true);
  const answer = await api('POST', '/api/mfa/totp/confirm', { code });
  busy(button, false);
  if (answer.status === 401) return showSignin();
  if (answer.status !== 200) {
    const wrong = answer.error === 'VALIDATION_FAILED' && answer.message.startsWith('code');
    say(totpMessage, 'error', wrong ? t('wrongTotpCode') : problem(answer, 'doingConfirm'));
    return;
  }
  $('totp-code').value = '';
  hideSetup();
  $('totp-password').hidden = true;
  $('recovery-codes').replaceChildren(...answer.body.recoveryCodes.map((c) => el('li', c)));
  $('totp-codes').hidden = false;
  showTotpState(true);
  say(totpMessage, 'ok', t('totpIsOn'));
});

$('totp-codes-done').addEventListener('click', () => {
  $('recovery-codes').replaceChildren();
  $('totp-codes').hidden = true;
  $('totp-password').hidden = false;
});

// The pending secret stays pending (not in force) until confirmed; a new start replaces it.
$('totp-cancel').addEventListener('click', () => {
  $('totp-code').value = '';
  hideSetup();
  totpMessage.hidden = true;
});

// ---- passkeys ----------------------------------------------------------------------------------

const passkeyMessage = $('passkeys-message');

/** base64url text to the ArrayBuffer WebAuthn wants, and back. */
function toBytes(text) {
  const base64 = text.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (text.length % 4)) % 4);
  return Uint8Array.from(atob(base64), (c) => c.charCodeAt(0)).buffer;
}
function toText(buffer) {
  let binary = '';
  for (const byte of new Uint8Array(buffer)) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

async function loadPasskeys() {
  const answer = await api('GET', '/api/passkeys');
  if (answer.status === 401) return showSignin();
  if (answer.status !== 200) {
    say(passkeyMessage, 'error', problem(answer, 'doingListPasskeys'));
    return;
  }
  const list = $('passkeys');
  list.replaceChildren(
    ...answer.body.map((passkey) => {
      const item = el('li', undefined, 'item');
      const text = el('div', undefined, 'item-text');
      text.append(
        el('p', passkey.name, 'item-title'),
        el('p', t('passkeyAdded', { date: date(passkey.createdAt) }), 'item-detail'),
      );
      const button = el('button', t('remove'), 'secondary small');
      button.type = 'button';
      button.addEventListener('click', () => removePasskey(passkey, button));
      item.append(text, button);
      return item;
    }),
  );
  if (answer.body.length === 0) list.append(el('li', t('noPasskeys'), 'empty'));
}

const confirmForm = $('passkey-confirm');
/** The passkey waiting for the password before it is removed. */
let confirming = null;

function hideConfirm() {
  confirming = null;
  confirmForm.hidden = true;
  $('passkey-confirm-pass').value = '';
}

/**
 * Removes a passkey. Within 10 minutes of signing in the session is enough; after that Usher
 * answers 403 and the password is asked for, then sent as `currentPassword`.
 */
async function removePasskey(passkey, button, currentPassword) {
  busy(button, true);
  const answer = await api(
    'DELETE',
    `/api/passkeys/${encodeURIComponent(passkey.id)}`,
    currentPassword === undefined ? undefined : { currentPassword },
  );
  busy(button, false);
  if (answer.status === 401) return showSignin();
  if (answer.status === 403 && currentPassword === undefined) {
    confirming = passkey;
    $('passkey-confirm-text').textContent = t('passkeyConfirm', { name: passkey.name });
    passkeyMessage.hidden = true;
    confirmForm.hidden = false;
    $('passkey-confirm-pass').focus();
    return;
  }
  if (answer.error === 'VALIDATION_FAILED' && answer.message.startsWith('currentPassword')) {
    say(passkeyMessage, 'error', t('wrongPassword'));
    return;
  }
  hideConfirm();
  if (answer.status === 204 || answer.status === 404) {
    say(passkeyMessage, 'ok', t('passkeyRemoved', { name: passkey.name }));
    await loadPasskeys();
  } else {
    say(passkeyMessage, 'error', problem(answer, 'doingRemove'));
  }
}

confirmForm.addEventListener('submit', async (event) => {
  event.preventDefault();
  const password = $('passkey-confirm-pass').value;
  if (!confirming) return;
  if (!password) {
    say(passkeyMessage, 'error', t('enterPasswordFirst'));
    return;
  }
  await removePasskey(confirming, $('passkey-confirm-submit'), password);
});

$('passkey-confirm-cancel').addEventListener('click', () => {
  hideConfirm();
  passkeyMessage.hidden = true;
});

$('passkey-add').addEventListener('submit', async (event) => {
  event.preventDefault();
  if (!window.PublicKeyCredential) {
    say(passkeyMessage, 'error', t('noPasskeySupport'));
    return;
  }
  const button = $('passkey-add-submit');
  busy(button, true);
  try {
    const options = await api('POST', '/api/passkeys/register/options');
    if (options.status === 401) return showSignin();
    if (options.status !== 200) {
      say(passkeyMessage, 'error', problem(options, 'doingAddPasskey'));
      return;
    }
    const o = options.body;
    let credential;
    try {
      credential = await navigator.credentials.create({
        publicKey: {
          ...o,
          challenge: toBytes(o.challenge),
          user: { ...o.user, id: toBytes(o.user.id) },
          excludeCredentials: (o.excludeCredentials ?? []).map((c) => ({ ...c, id: toBytes(c.id) })),
        },
      });
    } catch (error) {
      say(
        passkeyMessage,
        'error',
        error?.name === 'InvalidStateError' ? t('passkeyExists') : t('noPasskeyCreated'),
      );
      return;
    }
    const name = $('passkey-name').value.trim();
    const answer = await api('POST', '/api/passkeys/register', {
      credential: {
        id: credential.id,
        rawId: toText(credential.rawId),
        type: credential.type,
        authenticatorAttachment: credential.authenticatorAttachment ?? undefined,
        clientExtensionResults: credential.getClientExtensionResults(),
        response: {
          clientDataJSON: toText(credential.response.clientDataJSON),
          attestationObject: toText(credential.response.attestationObject),
          transports: credential.response.getTransports?.() ?? [],
        },
      },
      ...(name ? { name } : {}),
    });
    if (answer.status === 201) {
      $('passkey-name').value = '';
      say(passkeyMessage, 'ok', t('passkeyIsAdded', { name: answer.body.name }));
      await loadPasskeys();
    } else {
      say(passkeyMessage, 'error', problem(answer, 'doingAddPasskey'));
    }
  } finally {
    busy(button, false);
  }
});

// ---- providers: signing in with another account ------------------------------------------------

/** The configured providers, `[{id, name}]` (GET /api/oauth/providers): none until it answers. */
let providers = [];

/** Where the browser comes back to after the provider. */
const RETURN_TO = '/account';

/** The start of a sign-in (or a link) with a provider: a navigation there, never a fetch. */
function startUrl(id, intent) {
  const query = new URLSearchParams({ redirectTo: RETURN_TO });
  if (intent === 'link') query.set('intent', 'link');
  return `/api/oauth/${encodeURIComponent(id)}/start?${query}`;
}

const providerName = (id) => providers.find((p) => p.id === id)?.name ?? id;

/** A link that looks like a button: a provider start is a navigation, so an <a>. */
function buttonLink(text, href) {
  const link = el('a', text, 'button secondary');
  link.href = href;
  return link;
}

async function loadProviders() {
  const answer = await api('GET', '/api/oauth/providers');
  // Anything but a list (a server without providers, an outage): the page simply has no buttons.
  if (answer.status === 200 && Array.isArray(answer.body)) {
    providers = answer.body.filter((p) => typeof p?.id === 'string' && typeof p?.name === 'string');
  }
  $('providers').replaceChildren(
    ...providers.map((provider) => {
      const link = buttonLink(
        t('continueWith', { provider: provider.name }),
        startUrl(provider.id, 'signin'),
      );
      link.addEventListener('click', () => remember({ id: provider.id, intent: 'signin' }));
      const item = el('li');
      item.append(link);
      return item;
    }),
  );
  showProviders();
}

/** The provider buttons go with the sign-in form, when there are any. */
function showProviders() {
  $('signin-providers').hidden = signin.hidden || providers.length === 0;
}

const providersReady = loadProviders();

// Which provider this tab went to, so the page can name it when the browser comes back (the
// address then says only ?error=CODE). In sessionStorage: this tab only, gone when it closes.
const PENDING = 'usher.account.provider';
const PENDING_TTL_MS = 15 * 60_000;

function remember(pending) {
  try {
    sessionStorage.setItem(PENDING, JSON.stringify({ ...pending, at: Date.now() }));
  } catch {
    // No storage (a private window may refuse it): the messages say "the provider" instead.
  }
}

function recall() {
  try {
    const pending = JSON.parse(sessionStorage.getItem(PENDING) ?? 'null');
    sessionStorage.removeItem(PENDING);
    if (typeof pending?.id === 'string' && Math.abs(Date.now() - pending.at) < PENDING_TTL_MS) return pending;
  } catch {
    // Nothing usable kept: as if nothing was.
  }
  return null;
}

/**
 * What the provider's return left in the address: `?error=CODE`, or `#second-factor=<ticket>`.
 * Read once, then cleared from the address bar, so that the ticket stays in no history entry.
 */
function takeLanding() {
  const error = new URLSearchParams(location.search).get('error') ?? '';
  const ticket = new URLSearchParams(location.hash.slice(1)).get('second-factor') ?? '';
  if (location.search || location.hash) history.replaceState(null, '', location.pathname);
  return { error, ticket: ticket.trim(), pending: recall() };
}

/** The words for a provider's ?error=CODE; `linking` when it came back to a signed-in account. */
function landingProblem(code, name, linking) {
  switch (code) {
    case 'OAUTH_DENIED':
      return linking ? t('linkCancelled', { name }) : t('signinCancelled', { name });
    case 'ACCOUNT_EXISTS':
      return t('accountExists', { name });
    case 'IDENTITY_TAKEN':
      return t('identityTaken', { name });
    case 'SIGNUP_CLOSED':
      return t('signupClosed', { name });
    case 'SIGNIN_FAILED':
      return t('providerSigninFailed');
    default:
      return linking ? t('linkFailed', { name }) : t('providerFailed', { name });
  }
}

// ---- the second step of a provider sign-in -----------------------------------------------------

const secondFactor = $('second-factor');
/** The ticket from #second-factor=…: kept only here, never stored. */
let ticket = '';

function showSecondFactor() {
  $('account').hidden = true;
  signin.hidden = true;
  showProviders();
  secondFactor.hidden = false;
  document.title = t('signIn');
  $('heading').textContent = t('signIn');
  $('second-factor-code').focus();
}

function endSecondFactor() {
  ticket = '';
  secondFactor.hidden = true;
  $('second-factor-code').value = '';
}

secondFactor.addEventListener('submit', async (event) => {
  event.preventDefault();
  const code = $('second-factor-code').value.trim();
  if (!code) {
    say(message, 'error', t('enterCode'));
    return;
  }
  const button = $('second-factor-submit');
  busy(button, true);
  const answer = await api('POST', '/api/signin/second-factor', { ticket, code });
  busy(button, false);
  if (answer.status === 200) {
    endSecondFactor();
    message.hidden = true;
    await load();
  } else if (answer.headers.get('usher-second-factor') === 'totp') {
    // The ticket lives on: another try.
    say(message, 'error', t('wrongCode'));
    $('second-factor-code').select();
  } else if (answer.status === 401 || answer.status === 400) {
    say(message, 'error', t('ticketExpired'));
    showSignin();
  } else {
    say(message, 'error', problem(answer, 'doingSignIn'));
  }
});

$('second-factor-cancel').addEventListener('click', () => {
  message.hidden = true;
  showSignin();
});

// ---- linked accounts ---------------------------------------------------------------------------

const identitiesMessage = $('identities-message');
/** The account's identities, as last listed. */
let identities = [];

/** Linking and unlinking need a sign-in of the last 10 minutes; a little less, for the way there. */
const FRESH_SIGNIN_MS = 10 * 60_000 - 30_000;

async function loadIdentities() {
  await providersReady;
  const section = $('identities-section');
  const answer = await api('GET', '/api/account');
  if (answer.status === 401) return showSignin();
  if (answer.status !== 200) {
    section.hidden = false;
    say(identitiesMessage, 'error', problem(answer, 'doingListIdentities'));
    return;
  }
  showLocale(answer.body.locale);
  showTotpState(answer.body.totp === true);
  hasPassword = answer.body.password !== false;
  showPasswordForms();
  identities = Array.isArray(answer.body.identities) ? answer.body.identities : [];
  section.hidden = providers.length === 0 && identities.length === 0;
  const list = $('identities');
  list.replaceChildren(
    ...identities.map((identity) => {
      const item = el('li', undefined, 'item');
      const text = el('div', undefined, 'item-text');
      text.append(el('p', providerName(identity.provider), 'item-title'));
      if (identity.email) text.append(el('p', identity.email, 'item-detail'));
      text.append(el('p', t('linkedOn', { date: date(identity.createdAt) }), 'item-detail'));
      const button = el('button', t('unlink'), 'secondary small');
      button.type = 'button';
      button.addEventListener('click', () => unlink(identity, button));
      item.append(text, button);
      return item;
    }),
  );
  if (identities.length === 0) list.append(el('li', t('noIdentities'), 'empty'));
  $('identity-links').replaceChildren(
    ...providers.map((provider) => {
      const link = buttonLink(t('linkProvider', { provider: provider.name }), startUrl(provider.id, 'link'));
      link.addEventListener('click', (event) => linkProvider(event, provider, link));
      const item = el('li');
      item.append(link);
      return item;
    }),
  );
}

/** How long ago this session signed in, by the server's clock (its Date header) when it gives one. */
function signinAge(answer) {
  const serverNow = Date.parse(answer.headers.get('date') ?? '');
  return (Number.isNaN(serverNow) ? Date.now() : serverNow) - Date.parse(answer.body.session.createdAt);
}

/** Says that `what` needs a newer sign-in, with a button to sign out. */
function askToSignInAgain(what) {
  say(identitiesMessage, 'info', what);
  const button = el('button', t('signOut'), 'secondary small');
  button.type = 'button';
  button.addEventListener('click', () => signOut(button));
  identitiesMessage.append(button);
}

async function signOut(button) {
  busy(button, true);
  const answer = await api('POST', '/api/signout');
  busy(button, false);
  if (answer.status === 204) {
    identitiesMessage.hidden = true;
    say(message, 'ok', t('signedOutGoOn'));
    showSignin();
  } else {
    say(identitiesMessage, 'error', problem(answer, 'doingSignOut'));
  }
}

/**
 * "Link <provider>": a link to the start, followed once the session is known to be fresh enough
 * (the start would otherwise answer 401 in place of the page). A modified click (a new tab) is
 * left alone: the server checks all the same.
 */
async function linkProvider(event, provider, link) {
  if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  event.preventDefault();
  if (link.getAttribute('aria-disabled') === 'true') return;
  link.setAttribute('aria-disabled', 'true');
  const answer = await api('GET', '/api/session');
  link.removeAttribute('aria-disabled');
  if (answer.status === 401) return showSignin();
  if (answer.status !== 200) {
    say(identitiesMessage, 'error', problem(answer, 'doingLink', { provider: provider.name }));
    return;
  }
  if (signinAge(answer) > FRESH_SIGNIN_MS) {
    askToSignInAgain(t('reauthToLink', { provider: provider.name }));
    return;
  }
  const count = identities.filter((i) => i.provider === provider.id).length;
  remember({ id: provider.id, intent: 'link', count });
  location.assign(link.href);
}

async function unlink(identity, button) {
  const name = providerName(identity.provider);
  const what = identity.email ? `${name} (${identity.email})` : name;
  busy(button, true);
  const answer = await api('DELETE', `/api/identities/${encodeURIComponent(identity.id)}`);
  busy(button, false);
  if (answer.error === 'REAUTHENTICATION_REQUIRED')
    return askToSignInAgain(t('reauthToUnlink', { provider: name }));
  if (answer.status === 401) return showSignin();
  if (answer.status === 409) {
    say(identitiesMessage, 'error', t('lastMethod', { what }));
  } else if (answer.status === 204 || answer.status === 404) {
    say(identitiesMessage, 'ok', t('unlinked', { what }));
    await loadIdentities();
  } else {
    say(identitiesMessage, 'error', problem(answer, 'doingUnlink'));
  }
}

/** Shows an outcome of a link in the Linked accounts section, scrolled to. */
function sayLinked(kind, text) {
  say(identitiesMessage, kind, text);
  $('identities-section').scrollIntoView({ block: 'start' });
}

// ---- the language of the account's mail ----------------------------------------------------------

const languageMessage = $('language-message');
const localeSelect = $('locale');
/** The signed-in user as GET /api/session gave it: a PUT replaces email and name with these. */
let me = null;

/** A language's own name for itself ("Deutsch", "italiano"); the tag when the browser has none. */
function languageName(tag) {
  try {
    return new Intl.DisplayNames([tag], { type: 'language' }).of(tag) ?? tag;
  } catch {
    return tag;
  }
}

/** Selects the account's locale, adding it to the list when it is none of the four Usher ships. */
function showLocale(locale) {
  if (typeof locale !== 'string' || locale === '') return;
  if (![...localeSelect.options].some((option) => option.value === locale)) {
    const option = el('option', languageName(locale));
    option.value = locale;
    option.lang = locale;
    localeSelect.append(option);
  }
  localeSelect.value = locale;
}

$('language').addEventListener('submit', async (event) => {
  event.preventDefault();
  if (!me) return;
  const button = $('language-submit');
  const locale = localeSelect.value;
  busy(button, true);
  const answer = await api('PUT', `/api/users/${encodeURIComponent(me.id)}`, {
    email: me.email,
    name: me.name,
    locale,
  });
  busy(button, false);
  if (answer.status === 401) return showSignin();
  if (answer.status === 200) {
    const chosen = localeSelect.selectedOptions[0]?.textContent ?? languageName(locale);
    say(languageMessage, 'ok', t('languageSaved', { language: chosen }));
  } else {
    say(languageMessage, 'error', problem(answer, 'doingSaveLanguage'));
  }
});

// ---- the address: confirming it again ----------------------------------------------------------

$('verify-resend').addEventListener('click', async () => {
  const button = $('verify-resend');
  busy(button, true);
  const answer = await api('POST', '/api/email/verify/resend');
  busy(button, false);
  if (answer.status === 401) return showSignin();
  if (answer.status === 202) say($('who-message'), 'ok', t('verificationSent', { email: me?.email ?? '' }));
  else say($('who-message'), 'error', problem(answer, 'doingResend'));
});

// ---- email and password --------------------------------------------------------------------------

const credentialsMessage = $('credentials-message');
/** Whether the account has a password (GET /api/account): without one, a reset link sets it. */
let hasPassword = true;

function showPasswordForms() {
  $('no-password').hidden = hasPassword;
  $('change-email').hidden = !hasPassword;
  $('change-password').hidden = !hasPassword;
  $('delete-pass').hidden = !hasPassword;
  document.querySelector('label[for="delete-pass"]').hidden = !hasPassword;
}

$('set-password-mail').addEventListener('click', async () => {
  if (!me) return;
  const button = $('set-password-mail');
  busy(button, true);
  const answer = await api('POST', '/api/password/forgot', { email: me.email });
  busy(button, false);
  if (answer.status === 202) say(credentialsMessage, 'ok', t('setPasswordSent', { email: me.email }));
  else say(credentialsMessage, 'error', problem(answer, 'doingForgot'));
});

/** PUT /api/users/{id} with the account's own email and name, and `changes` over them. */
function putMe(changes) {
  return api('PUT', `/api/users/${encodeURIComponent(me.id)}`, {
    email: me.email,
    name: me.name,
    ...changes,
  });
}

/** The words for a refused change of email or password; '' when the answer needs no special words. */
function changeProblem(answer, what) {
  if (answer.error === 'VALIDATION_FAILED' && answer.message.startsWith('currentPassword'))
    return t('wrongPassword');
  if (answer.status === 409) return t('emailTaken');
  return (
    fieldProblem(answer, 'password', 'passwordRefused') ||
    fieldProblem(answer, 'email', 'emailRefused') ||
    problem(answer, what)
  );
}

$('change-email').addEventListener('submit', async (event) => {
  event.preventDefault();
  if (!me) return;
  const email = $('new-email').value.trim();
  const currentPassword = $('change-email-pass').value;
  if (!email) return say(credentialsMessage, 'error', t('enterNewEmail'));
  if (email.toLowerCase() === me.email.toLowerCase()) return say(credentialsMessage, 'info', t('sameEmail'));
  if (!currentPassword) return say(credentialsMessage, 'error', t('enterPasswordFirst'));
  const button = $('change-email-submit');
  busy(button, true);
  const answer = await putMe({ email, currentPassword });
  busy(button, false);
  if (answer.status === 401) return showSignin();
  if (answer.status !== 200)
    return say(credentialsMessage, 'error', changeProblem(answer, 'doingChangeEmail'));
  $('new-email').value = '';
  $('change-email-pass').value = '';
  await load();
  say(credentialsMessage, 'ok', t('emailChanged', { email: answer.body.email }));
});

$('change-password').addEventListener('submit', async (event) => {
  event.preventDefault();
  if (!me) return;
  const currentPassword = $('change-password-current').value;
  const password = $('change-password-new').value;
  const again = $('change-password-again');
  if (!currentPassword) return say(credentialsMessage, 'error', t('enterPasswordFirst'));
  if (!password) return say(credentialsMessage, 'error', t('typeNewPassword'));
  if (password !== again.value) {
    again.setAttribute('aria-invalid', 'true');
    again.focus();
    return say(credentialsMessage, 'error', t('notSame'));
  }
  again.removeAttribute('aria-invalid');
  const button = $('change-password-submit');
  busy(button, true);
  const answer = await putMe({ password, currentPassword });
  busy(button, false);
  if (answer.status === 401) return showSignin();
  if (answer.status !== 200)
    return say(credentialsMessage, 'error', changeProblem(answer, 'doingChangePassword'));
  for (const id of ['change-password-current', 'change-password-new', 'change-password-again'])
    $(id).value = '';
  say(credentialsMessage, 'ok', t('passwordChanged'));
  await loadSessions();
});

// ---- deleting the account ------------------------------------------------------------------------

const deleteMessage = $('delete-message');
const deleteForm = $('delete');

function hideDelete() {
  deleteForm.hidden = true;
  $('delete-start').hidden = false;
  $('delete-pass').value = '';
  $('delete-sure').checked = false;
}

$('delete-start').addEventListener('click', () => {
  deleteMessage.hidden = true;
  $('delete-start').hidden = true;
  deleteForm.hidden = false;
  (hasPassword ? $('delete-pass') : $('delete-sure')).focus();
});

$('delete-cancel').addEventListener('click', () => {
  hideDelete();
  deleteMessage.hidden = true;
  $('delete-start').focus();
});

deleteForm.addEventListener('submit', async (event) => {
  event.preventDefault();
  if (!me) return;
  const currentPassword = $('delete-pass').value;
  if (hasPassword && !currentPassword) return say(deleteMessage, 'error', t('reauthToDelete'));
  if (!$('delete-sure').checked) return say(deleteMessage, 'error', t('tickToDelete'));
  const button = $('delete-submit');
  busy(button, true);
  // Without a password the session must be under 10 minutes old: then no body at all.
  const answer = await api(
    'DELETE',
    `/api/users/${encodeURIComponent(me.id)}`,
    hasPassword ? { currentPassword } : undefined,
  );
  busy(button, false);
  if (answer.status === 204) {
    hideDelete();
    me = null;
    showSignin();
    say(message, 'ok', t('deleted'));
    return;
  }
  if (answer.status === 401) return showSignin();
  if (answer.status === 403)
    return say(deleteMessage, 'error', t(hasPassword ? 'reauthToDelete' : 'reauthNoPassword'));
  say(deleteMessage, 'error', changeProblem(answer, 'doingDelete'));
});

// ---- the start ---------------------------------------------------------------------------------

async function start() {
  // /account#signup and /account#forgot: an app's links to those doors.
  const door = location.hash === '#signup' ? 'signup' : location.hash === '#forgot' ? 'forgot' : '';
  const landing = takeLanding();
  if (landing.ticket) {
    ticket = landing.ticket;
    showSecondFactor();
    return;
  }
  const signedIn = await load();
  if (signedIn === undefined) return;
  if (!signedIn && door) showDoor(door);
  await providersReady;
  const { error, pending } = landing;
  const name = pending
    ? providerName(pending.id)
    : providers.length === 1
      ? providers[0].name
      : t('theProvider');
  const visible = signedIn && !$('identities-section').hidden;
  if (error) {
    const text = landingProblem(error, name, signedIn);
    if (visible) sayLinked('error', text);
    else say(message, 'error', text);
  } else if (visible && pending?.intent === 'link') {
    const now = identities.filter((i) => i.provider === pending.id).length;
    if (now > pending.count) sayLinked('ok', t('linked', { name }));
  }
}

start();
