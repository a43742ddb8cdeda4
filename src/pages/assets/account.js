// The account page: who is signed in, their sessions, two-step sign-in (TOTP) and passkeys, all
// through Usher's JSON API with the session cookie. A reference for teams who build their own page:
// every call is a plain fetch, and text from the API only ever reaches the page through textContent.
import { say, UNREACHABLE, waitText } from './link.js';

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
function problem(answer, what) {
  if (answer.status === 0) return UNREACHABLE;
  if (answer.status === 429) return `Too many attempts. Try again ${waitText(answer.retryAfter)}.`;
  if (answer.status >= 500 && answer.status !== 503) return `Something went wrong: ${what} did not happen.`;
  return answer.message || `Something went wrong: ${what} did not happen.`;
}

const when = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const date = (iso) => when.format(new Date(iso));

/** "Chrome on Android" from a User-Agent header; the header itself when it names no known browser. */
function deviceName(userAgent) {
  if (!userAgent) return 'Unknown device';
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
  return system ? `${browser} on ${system}` : browser;
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

function showSignin() {
  $('account').hidden = true;
  signin.hidden = false;
  document.title = 'Sign in';
  $('heading').textContent = 'Sign in';
  $('email').focus();
}

signin.addEventListener('submit', async (event) => {
  event.preventDefault();
  const button = $('signin-submit');
  const body = { email: $('email').value.trim(), password: $('password').value };
  const code = $('signin-code').value.trim();
  if (!$('signin-code-field').hidden && code) body.code = code;
  if (!body.email || !body.password) {
    say(message, 'error', 'Enter your email and your password.');
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
    say(
      message,
      'info',
      code ? 'That code is not right. Try the current one.' : 'Enter the code from your authenticator app.',
    );
  } else if (answer.status === 401 || answer.status === 400) {
    say(message, 'error', 'The email or the password is not right.');
  } else {
    say(message, 'error', problem(answer, 'signing in'));
  }
});

// ---- the account -------------------------------------------------------------------------------

async function load() {
  const answer = await api('GET', '/api/session');
  if (answer.status === 401) {
    showSignin();
    return;
  }
  if (answer.status !== 200) {
    say(message, 'error', problem(answer, 'loading your account'));
    return;
  }
  const { user } = answer.body;
  signin.hidden = true;
  document.title = 'Your account';
  $('heading').textContent = 'Your account';
  $('who-name').textContent = user.name;
  $('who-email').textContent = user.email;
  const verified = $('who-verified');
  // Profile A's user object has no emailVerified: then nothing is claimed either way.
  verified.hidden = typeof user.emailVerified !== 'boolean';
  verified.textContent = user.emailVerified ? 'Verified' : 'Not verified';
  verified.className = user.emailVerified ? 'badge ok' : 'badge warn';
  $('account').hidden = false;
  await Promise.all([loadSessions(), loadPasskeys()]);
}

// ---- sessions ----------------------------------------------------------------------------------

async function loadSessions() {
  const list = $('sessions');
  const answer = await api('GET', '/api/sessions');
  if (answer.status === 401) return showSignin();
  if (answer.status !== 200) {
    say($('sessions-message'), 'error', problem(answer, 'listing your sessions'));
    return;
  }
  list.replaceChildren(
    ...answer.body.map((session) => {
      const item = el('li', undefined, 'item');
      const text = el('div', undefined, 'item-text');
      const title = el('p', deviceName(session.userAgent), 'item-title');
      if (session.userAgent) title.title = session.userAgent;
      if (session.current) title.append(' ', el('span', 'This device', 'badge ok'));
      text.append(
        title,
        el('p', `Signed in ${date(session.createdAt)}`, 'item-detail'),
        el('p', `Last seen ${date(session.lastSeenAt)}`, 'item-detail'),
      );
      const button = el('button', 'Sign out', 'secondary small');
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
    say(message, 'ok', 'You are signed out.');
    showSignin();
  } else if (answer.status === 204 || answer.status === 404) {
    say($('sessions-message'), 'ok', 'That session is signed out.');
    await loadSessions();
  } else if (answer.status === 401) {
    showSignin();
  } else {
    say($('sessions-message'), 'error', problem(answer, 'signing out'));
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

$('totp-password').addEventListener('submit', async (event) => {
  event.preventDefault();
  const turnOn = event.submitter?.value !== 'off';
  const password = $('totp-pass').value;
  if (!password) {
    say(totpMessage, 'error', 'Enter your password first.');
    return;
  }
  const button = turnOn ? $('totp-on') : $('totp-off');
  busy(button, true);
  const answer = await api(turnOn ? 'POST' : 'DELETE', '/api/mfa/totp', { password });
  busy(button, false);
  if (answer.status === 401) return showSignin();
  if (answer.error === 'VALIDATION_FAILED' && answer.message.startsWith('password')) {
    say(totpMessage, 'error', 'That password is not right.');
    return;
  }
  $('totp-pass').value = '';
  $('totp-codes').hidden = true;
  if (!turnOn) {
    hideSetup();
    if (answer.status === 204) say(totpMessage, 'ok', 'Two-step sign-in is off.');
    else say(totpMessage, 'error', problem(answer, 'turning it off'));
    return;
  }
  if (answer.status === 409) {
    say(totpMessage, 'info', 'Two-step sign-in is already on. To set it up again, turn it off first.');
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
    say(totpMessage, 'error', problem(answer, 'turning it on'));
  }
});

$('totp-confirm').addEventListener('submit', async (event) => {
  event.preventDefault();
  const code = $('totp-code').value.replace(/\s/g, '');
  if (!/^\d{6}$/.test(code)) {
    say(totpMessage, 'error', 'Enter the 6 digits the app shows.');
    return;
  }
  const button = $('totp-confirm-submit');
  busy(button, true);
  const answer = await api('POST', '/api/mfa/totp/confirm', { code });
  busy(button, false);
  if (answer.status === 401) return showSignin();
  if (answer.status !== 200) {
    const wrong = answer.error === 'VALIDATION_FAILED' && answer.message.startsWith('code');
    say(
      totpMessage,
      'error',
      wrong
        ? "That code is not right. Check the phone's clock and try the current code."
        : problem(answer, 'confirming'),
    );
    return;
  }
  $('totp-code').value = '';
  hideSetup();
  $('totp-password').hidden = true;
  $('recovery-codes').replaceChildren(...answer.body.recoveryCodes.map((c) => el('li', c)));
  $('totp-codes').hidden = false;
  say(totpMessage, 'ok', 'Two-step sign-in is on.');
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
    say(passkeyMessage, 'error', problem(answer, 'listing your passkeys'));
    return;
  }
  const list = $('passkeys');
  list.replaceChildren(
    ...answer.body.map((passkey) => {
      const item = el('li', undefined, 'item');
      const text = el('div', undefined, 'item-text');
      text.append(
        el('p', passkey.name, 'item-title'),
        el('p', `Added ${date(passkey.createdAt)}`, 'item-detail'),
      );
      const button = el('button', 'Remove', 'secondary small');
      button.type = 'button';
      button.addEventListener('click', () => removePasskey(passkey, button));
      item.append(text, button);
      return item;
    }),
  );
  if (answer.body.length === 0) list.append(el('li', 'No passkeys yet.', 'empty'));
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
    $('passkey-confirm-text').textContent =
      `You signed in more than 10 minutes ago: enter your password to remove "${passkey.name}".`;
    passkeyMessage.hidden = true;
    confirmForm.hidden = false;
    $('passkey-confirm-pass').focus();
    return;
  }
  if (answer.error === 'VALIDATION_FAILED' && answer.message.startsWith('currentPassword')) {
    say(passkeyMessage, 'error', 'That password is not right.');
    return;
  }
  hideConfirm();
  if (answer.status === 204 || answer.status === 404) {
    say(passkeyMessage, 'ok', `The passkey "${passkey.name}" is removed.`);
    await loadPasskeys();
  } else {
    say(passkeyMessage, 'error', problem(answer, 'removing it'));
  }
}

confirmForm.addEventListener('submit', async (event) => {
  event.preventDefault();
  const password = $('passkey-confirm-pass').value;
  if (!confirming) return;
  if (!password) {
    say(passkeyMessage, 'error', 'Enter your password first.');
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
    say(passkeyMessage, 'error', 'This browser cannot create passkeys.');
    return;
  }
  const button = $('passkey-add-submit');
  busy(button, true);
  try {
    const options = await api('POST', '/api/passkeys/register/options');
    if (options.status === 401) return showSignin();
    if (options.status !== 200) {
      say(passkeyMessage, 'error', problem(options, 'adding a passkey'));
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
        error?.name === 'InvalidStateError'
          ? 'This device already holds a passkey for your account.'
          : 'No passkey was created.',
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
      say(passkeyMessage, 'ok', `The passkey "${answer.body.name}" is added.`);
      await loadPasskeys();
    } else {
      say(passkeyMessage, 'error', problem(answer, 'adding a passkey'));
    }
  } finally {
    busy(button, false);
  }
});

load();
