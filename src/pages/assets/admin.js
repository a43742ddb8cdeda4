// The console for support staff and administrators (GET /admin, issue 29): find users, look at
// one (details, sessions, sign-in methods, linked accounts), and act on them through the admin
// API with the session cookie. Support users see only what their role may do (read, end sessions,
// send mails). Where the console is (a search, a user) lives in the address's fragment, which a
// browser never sends: an email searched for reaches no access log, and Back and links work.
// Text from the API only ever reaches the page through textContent, never as HTML.
import { say, UNREACHABLE, waitText } from './link.js';

const $ = (id) => document.getElementById(id);
const message = $('message');

/**
 * Calls the API and reads the answer as `{status, body, error, message, retryAfter, headers}`;
 * status 0 when the server could not be reached. Never throws. (As account.js does it.)
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
    json = JSON.parse(await response.text(), exactIds);
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

/**
 * Ids are 64-bit integers, written as exact JSON numbers: one past 2^53 would be rounded by a plain
 * parse, so such an id is kept as the text it was sent as (where the browser shows the reviver it).
 */
function exactIds(key, value, context) {
  if (key === 'id' && typeof value === 'number' && !Number.isSafeInteger(value) && context?.source) {
    return context.source;
  }
  return value;
}

/** What went wrong, in words, for an answer that was not a success: the API's own message first. */
function problem(answer, what) {
  if (answer.status === 0) return UNREACHABLE;
  if (answer.status === 429) return `Too many attempts. Try again ${waitText(answer.retryAfter)}.`;
  if (answer.status >= 500 && answer.status !== 503) return `Something went wrong: ${what} did not happen.`;
  return answer.message || `Something went wrong: ${what} did not happen.`;
}

const when = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const date = (iso) => (iso ? when.format(new Date(iso)) : 'Never');

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

const ROLE_NAMES = { user: 'User', support: 'Support', admin: 'Admin' };
const roleName = (role) => ROLE_NAMES[role] ?? role;

function roleBadge(role) {
  return el('span', roleName(role), role === 'user' ? 'badge' : 'badge role');
}

function statusBadge(status) {
  return el(
    'span',
    status === 'disabled' ? 'Disabled' : 'Active',
    status === 'disabled' ? 'badge warn' : 'badge ok',
  );
}

/** The views, one shown at a time. */
const VIEWS = ['signin', 'denied', 'search-view', 'user-view', 'invite-view'];

function show(view) {
  for (const id of VIEWS) $(id).hidden = id !== view;
  const inConsole = view === 'search-view' || view === 'user-view' || view === 'invite-view';
  $('nav').hidden = !inConsole;
  $('me').hidden = !(inConsole || view === 'denied');
  for (const link of [$('nav-search'), $('nav-invite')]) link.removeAttribute('aria-current');
  if (view === 'search-view') $('nav-search').setAttribute('aria-current', 'page');
  if (view === 'invite-view') $('nav-invite').setAttribute('aria-current', 'page');
}

// ---- who is signed in ----------------------------------------------------------------------------

/** The signed-in user: `{id, email, name, role}`, or null. */
let me = null;
const isAdmin = () => me?.role === 'admin';

/** Shows the sign-in form; `text`, when given, says why. */
function showSignin(text) {
  me = null;
  show('signin');
  document.title = 'Sign in: Usher console';
  $('heading').textContent = 'Usher console';
  if (text) say(message, 'info', text);
  $('email').focus();
}

/** After any call: a 401 means the session is gone (ended, expired, or the account disabled). */
function signedOut(answer) {
  if (answer.status !== 401) return false;
  showSignin('Your session has ended. Sign in again.');
  return true;
}

/** Reads who is signed in, then shows the console (or why it cannot be used). */
async function load() {
  const answer = await api('GET', '/api/account');
  if (answer.status === 401) {
    showSignin();
    return;
  }
  if (answer.status !== 200 || !answer.body?.user) {
    say(message, 'error', problem(answer, 'loading your account'));
    return;
  }
  const { user, role } = answer.body;
  me = { id: user.id, email: user.email, name: user.name, role: typeof role === 'string' ? role : 'user' };
  $('me-email').textContent = me.email;
  $('me-role').replaceWith(Object.assign(roleBadge(me.role), { id: 'me-role' }));
  if (me.role !== 'support' && me.role !== 'admin') {
    show('denied');
    document.title = 'Usher console';
    $('denied-email').textContent = me.email;
    $('denied-signout').focus();
    return;
  }
  $('nav-invite').hidden = !isAdmin();
  await route(true);
}

// ---- signing in ------------------------------------------------------------------------------------

const signin = $('signin');

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
  button.disabled = true;
  const answer = await api('POST', '/api/signin', body);
  button.disabled = false;
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

async function signOut(button) {
  button.disabled = true;
  const answer = await api('POST', '/api/signout');
  button.disabled = false;
  if (answer.status === 204 || answer.status === 200 || answer.status === 401) {
    $('signin-code-field').hidden = true;
    showSignin();
    say(message, 'ok', 'You are signed out.');
  } else {
    say(message, 'error', problem(answer, 'signing out'));
  }
}

$('signout').addEventListener('click', () => signOut($('signout')));
$('denied-signout').addEventListener('click', () => signOut($('denied-signout')));

// ---- where the console is: the address's fragment -------------------------------------------------
// #search&q=…&status=…&verified=…&role=…&sort=…&page=…&size=…, #user=ID, #invite. Anything else: a
// search.

const FILTERS = ['q', 'status', 'verified', 'role', 'sort'];
const SIZES = ['20', '50', '100'];

function place() {
  const params = new URLSearchParams(location.hash.slice(1));
  const user = params.get('user');
  if (user !== null && /^[1-9][0-9]{0,18}$/.test(user)) return { view: 'user', id: user };
  if (params.has('invite')) return { view: 'invite', search: searchIn(new URLSearchParams()) };
  return { view: 'search', search: searchIn(params) };
}

/** The search a fragment's parameters describe, with the defaults for what they leave out. */
function searchIn(params) {
  const search = {};
  for (const key of FILTERS) search[key] = params.get(key) ?? '';
  const page = Number.parseInt(params.get('page') ?? '1', 10);
  search.page = Number.isSafeInteger(page) && page >= 1 ? page : 1;
  search.size = SIZES.includes(params.get('size') ?? '') ? params.get('size') : SIZES[0];
  return search;
}

function searchHash(search) {
  const params = new URLSearchParams([['search', '']]);
  for (const key of FILTERS) if (search[key]) params.set(key, search[key]);
  if (search.page > 1) params.set('page', String(search.page));
  if (search.size !== SIZES[0]) params.set('size', search.size);
  return `#${params.toString().replace(/^search=/, 'search')}`;
}

/** A message to show once the next view is drawn (an outcome that leads elsewhere). */
let pending = null;
/** The view drawn last, to move focus only when the view changes. */
let drawn = '';

/** Goes to `hash`; drawn at once when the address already says so (no hashchange then). */
function go(hash, outcome) {
  pending = outcome ?? null;
  if (new URL(hash, location.href).hash === location.hash) route();
  else location.hash = hash;
}

async function route(first = false) {
  // Signed out, or an account the console is not for: the address changes nothing.
  if (me?.role !== 'support' && me?.role !== 'admin') return;
  const outcome = pending;
  pending = null;
  if (outcome) say(message, outcome[0], outcome[1]);
  else if (!first) message.hidden = true;
  const where = place();
  const before = drawn;
  drawn = where.view;
  if (where.view === 'user') {
    await showUser(where.id, before !== 'user');
  } else if (where.view === 'invite' && isAdmin()) {
    show('invite-view');
    document.title = 'Invite a user: Usher console';
    if (before !== 'invite') $('invite-email').focus();
  } else {
    show('search-view');
    document.title = 'Find users: Usher console';
    await runSearch(where.search, before !== 'search' && !first);
    if (first && document.activeElement === document.body) $('q').focus();
  }
}

window.addEventListener('hashchange', () => route());

// ---- finding users -----------------------------------------------------------------------------------

const searchForm = $('search');
const resultsStatus = $('results-status');
/** The search drawn last, for the pager and for coming back to it. */
let lastSearch = null;
/** Counts searches: an answer that comes after a newer search was started is dropped. */
let searches = 0;

function formSearch() {
  const search = { page: 1, size: $('size').value };
  for (const key of FILTERS) search[key] = $(key).value.trim();
  return search;
}

searchForm.addEventListener('submit', (event) => {
  event.preventDefault();
  message.hidden = true;
  go(searchHash(formSearch()));
});

// A filter applies as soon as it is chosen.
for (const id of ['status', 'verified', 'role', 'sort', 'size']) {
  $(id).addEventListener('change', () => go(searchHash(formSearch())));
}

async function runSearch(search, focusHeading) {
  for (const key of FILTERS) $(key).value = search[key];
  $('size').value = search.size;
  lastSearch = search;
  $('back').href = searchHash(search);
  if (focusHeading) $('search-title').focus();
  const query = new URLSearchParams();
  for (const key of FILTERS) if (search[key]) query.set(key, search[key]);
  query.set('page', String(search.page));
  query.set('size', search.size);
  const button = $('search-submit');
  const mine = ++searches;
  button.disabled = true;
  resultsStatus.textContent = 'Searching…';
  const answer = await api('GET', `/api/admin/users?${query}`);
  if (mine !== searches) return;
  button.disabled = false;
  if (signedOut(answer)) return;
  if (answer.status !== 200 || !Array.isArray(answer.body)) {
    resultsStatus.textContent = '';
    $('results').hidden = true;
    $('pager').hidden = true;
    say(message, 'error', problem(answer, 'the search'));
    return;
  }
  const users = answer.body;
  const size = Number(search.size);
  const header = Number.parseInt(answer.headers.get('x-total-count') ?? '', 10);
  const total = Number.isSafeInteger(header) && header >= 0 ? header : users.length;
  const pages = Math.max(1, Math.ceil(total / size));
  const first = (search.page - 1) * size + 1;
  $('results-body').replaceChildren(...users.map(resultRow));
  $('results').hidden = users.length === 0;
  if (total === 0) resultsStatus.textContent = 'No users match.';
  else if (users.length === 0)
    resultsStatus.textContent = `${count(total)} match; none on page ${search.page}.`;
  else if (total <= size && search.page === 1) resultsStatus.textContent = `${count(total)} match.`;
  else resultsStatus.textContent = `${count(total)} match; showing ${first} to ${first + users.length - 1}.`;
  $('pager').hidden = pages <= 1 && search.page <= 1;
  $('page-text').textContent = `Page ${search.page} of ${pages}`;
  $('page-prev').disabled = search.page <= 1;
  $('page-next').disabled = search.page >= pages;
}

const count = (n) => (n === 1 ? '1 user' : `${n.toLocaleString()} users`);

/** A cell of the results; `name` is its column (a class, for the phone's layout). */
function cell(name, ...content) {
  const td = el('td', undefined, name);
  td.append(...content);
  return td;
}

function resultRow(user) {
  const row = el('tr');
  if (user.status === 'disabled') row.className = 'disabled';
  const link = el('a', user.email);
  link.href = `#user=${encodeURIComponent(user.id)}`;
  row.append(
    cell('email', link),
    cell('name', user.name),
    cell('role', roleBadge(user.role)),
    cell('status', statusBadge(user.status)),
    cell('last', el('span', 'Last sign-in ', 'phone-label'), date(user.lastSignInAt)),
  );
  return row;
}

$('page-prev').addEventListener('click', () => {
  if (lastSearch && lastSearch.page > 1) go(searchHash({ ...lastSearch, page: lastSearch.page - 1 }));
});
$('page-next').addEventListener('click', () => {
  if (lastSearch) go(searchHash({ ...lastSearch, page: lastSearch.page + 1 }));
});

// ---- one user ----------------------------------------------------------------------------------------

/** The user shown: the admin view (AdminUserDetail). */
let shown = null;
/** Counts loads of a user: an answer that comes after another was asked for is dropped. */
let loads = 0;

async function showUser(id, focusHeading) {
  show('user-view');
  if (shown?.id?.toString() !== id) {
    // Nothing of the last user stays on screen while this one loads.
    shown = null;
    $('user-title').textContent = 'Loading…';
    for (const list of ['details', 'sessions', 'factors', 'identities', 'user-badges'])
      $(list).replaceChildren();
    $('user-email').textContent = '';
  }
  if (!lastSearch) $('back').href = '#search';
  if (focusHeading) $('user-title').focus();
  const mine = ++loads;
  const answer = await api('GET', `/api/admin/users/${encodeURIComponent(id)}`);
  if (mine !== loads) return;
  if (signedOut(answer)) return;
  if (answer.status !== 200 || !answer.body) {
    $('user-title').textContent = 'User not found';
    $('user-view')
      .querySelectorAll('section')
      .forEach((s) => {
        s.hidden = true;
      });
    say(message, 'error', problem(answer, 'loading this user'));
    return;
  }
  drawUser(answer.body);
}

function term(list, name, ...value) {
  const dd = el('dd');
  dd.append(...value);
  list.append(el('dt', name), dd);
}

function item(title, ...details) {
  const li = el('li', undefined, 'item');
  const text = el('div', undefined, 'item-text');
  text.append(title instanceof Node ? title : el('p', title, 'item-title'));
  for (const detail of details) text.append(el('p', detail, 'item-detail'));
  li.append(text);
  return li;
}

function drawUser(user) {
  shown = user;
  for (const section of $('user-view').querySelectorAll('section')) section.hidden = false;
  document.title = `${user.name}: Usher console`;
  $('user-title').textContent = user.name;
  $('user-email').textContent = user.email;
  const verified = el('span', user.emailVerified ? 'Email verified' : 'Email not verified', 'badge');
  if (!user.emailVerified) verified.className = 'badge muted';
  $('user-badges').replaceChildren(roleBadge(user.role), ' ', statusBadge(user.status), ' ', verified);

  const details = $('details');
  details.replaceChildren();
  term(details, 'Status', user.status === 'disabled' ? 'Disabled' : 'Active');
  if (user.status === 'disabled') term(details, 'Reason', user.disabledReason || 'None given');
  term(details, 'Role', roleName(user.role));
  term(
    details,
    'App roles',
    Array.isArray(user.roles) && user.roles.length > 0 ? user.roles.join(', ') : 'None',
  );
  term(details, 'Created', date(user.createdAt));
  term(details, 'Last sign-in', date(user.lastSignInAt));
  term(details, 'User id', String(user.id));

  // What a support user may not do is not offered to them at all.
  const admin = isAdmin();
  $('actions-hint').hidden = admin;
  $('act-disable').hidden = !admin || user.status === 'disabled';
  $('act-enable').hidden = !admin || user.status !== 'disabled';
  $('act-delete').hidden = !admin;
  $('act-mfa').hidden = !admin;
  // A verified address needs no verification mail (the API refuses one).
  $('act-verify').hidden = user.emailVerified === true;
  $('role-form').hidden = !admin;
  $('role-select').value = user.role;

  const sessions = Array.isArray(user.sessions) ? user.sessions : [];
  $('sessions').replaceChildren(
    ...sessions.map((session) => {
      const title = el('p', deviceName(session.userAgent), 'item-title');
      if (session.userAgent) title.title = session.userAgent;
      if (session.current) title.append(' ', el('span', 'This browser', 'badge ok'));
      return item(
        title,
        `Signed in ${date(session.createdAt)}`,
        `Last seen ${date(session.lastSeenAt)}`,
        `Expires ${date(session.expiresAt)}`,
      );
    }),
  );
  if (sessions.length === 0) $('sessions').append(el('li', 'No sessions: signed in nowhere.', 'empty'));
  $('act-sessions').disabled = sessions.length === 0;

  const passkeys = Array.isArray(user.passkeys) ? user.passkeys : [];
  $('factors').replaceChildren(
    item('Password', user.password ? 'Set' : 'None (invited, or signs in another way)'),
    item('Two-step sign-in (authenticator app)', user.totp ? 'On' : 'Off'),
    ...passkeys.map((passkey) => item(`Passkey: ${passkey.name}`, `Added ${date(passkey.createdAt)}`)),
  );
  if (passkeys.length === 0) $('factors').append(item('Passkeys', 'None'));
  $('act-mfa').disabled = !user.totp && passkeys.length === 0;

  const identities = Array.isArray(user.identities) ? user.identities : [];
  $('identities').replaceChildren(
    ...identities.map((identity) =>
      item(
        identity.provider,
        ...(identity.email ? [identity.email] : []),
        `Linked ${date(identity.createdAt)}`,
      ),
    ),
  );
  if (identities.length === 0) $('identities').append(el('li', 'None.', 'empty'));
}

// ---- the page's own confirmation ---------------------------------------------------------------------

const dialog = $('confirm');
let settle = null;

/**
 * Asks before a destructive action. `reason`: offers the optional reason field; `typed`: the text
 * (an email) to type before the action can go ahead. Resolves with `{reason}`, or null when
 * cancelled (the button, Escape).
 */
function confirmAction({ title, text, ok, reason = false, typed = '' }) {
  $('confirm-title').textContent = title;
  $('confirm-text').textContent = text;
  $('confirm-ok').textContent = ok;
  $('confirm-reason-field').hidden = !reason;
  $('confirm-reason').value = '';
  $('confirm-type-field').hidden = !typed;
  $('confirm-type').value = '';
  $('confirm-type-label').textContent = typed ? `Type ${typed} to confirm` : 'Type the email to confirm';
  dialog.dataset.typed = typed;
  $('confirm-ok').disabled = Boolean(typed);
  dialog.showModal();
  (typed ? $('confirm-type') : reason ? $('confirm-reason') : $('confirm-cancel')).focus();
  return new Promise((resolve) => {
    settle = resolve;
  });
}

const typedMatches = () =>
  $('confirm-type').value.trim().toLowerCase() === (dialog.dataset.typed ?? '').trim().toLowerCase();

$('confirm-type').addEventListener('input', () => {
  $('confirm-ok').disabled = !typedMatches();
});

$('confirm-form').addEventListener('submit', (event) => {
  event.preventDefault();
  if (dialog.dataset.typed && !typedMatches()) return;
  dialog.close('ok');
});
$('confirm-cancel').addEventListener('click', () => dialog.close('cancel'));
dialog.addEventListener('close', () => {
  const resolve = settle;
  settle = null;
  resolve?.(dialog.returnValue === 'ok' ? { reason: $('confirm-reason').value.trim() } : null);
  dialog.returnValue = '';
});

// ---- acting on the user shown ------------------------------------------------------------------------

/** Runs one call for the user shown, with `button` busy; the answer, or null when signed out. */
async function act(button, method, suffix, body) {
  const user = shown;
  button.disabled = true;
  const answer = await api(method, `/api/admin/users/${encodeURIComponent(user.id)}${suffix}`, body);
  button.disabled = false;
  if (signedOut(answer)) return null;
  return answer;
}

/** Draws the user shown afresh (after a call that answers 204). */
async function redraw() {
  const mine = ++loads;
  const answer = await api('GET', `/api/admin/users/${encodeURIComponent(shown.id)}`);
  if (mine !== loads) return;
  if (signedOut(answer)) return;
  if (answer.status === 200) drawUser(answer.body);
}

const who = (user) => `${user.name} (${user.email})`;

$('act-disable').addEventListener('click', async () => {
  const user = shown;
  const answer = await confirmAction({
    title: 'Disable this account?',
    text: `${who(user)} will be signed out everywhere and unable to sign in until the account is enabled again.`,
    ok: 'Disable',
    reason: true,
  });
  if (!answer) return;
  const result = await act(
    $('act-disable'),
    'POST',
    '/disable',
    answer.reason ? { reason: answer.reason } : {},
  );
  if (!result) return;
  if (result.status === 200) {
    drawUser(result.body);
    say(message, 'ok', `${user.email} is disabled: every session ended and sign-in is refused.`);
    $('act-enable').focus();
  } else {
    say(message, 'error', problem(result, 'disabling'));
  }
});

$('act-enable').addEventListener('click', async () => {
  const user = shown;
  const result = await act($('act-enable'), 'POST', '/enable', {});
  if (!result) return;
  if (result.status === 200) {
    drawUser(result.body);
    say(message, 'ok', `${user.email} is enabled: they can sign in again.`);
    $('act-disable').focus();
  } else {
    say(message, 'error', problem(result, 'enabling'));
  }
});

$('act-sessions').addEventListener('click', async () => {
  const user = shown;
  const self = String(user.id) === String(me.id);
  const answer = await confirmAction({
    title: 'End all sessions?',
    text: self
      ? 'This is your own account: you will be signed out here too.'
      : `${who(user)} will be signed out on every device.`,
    ok: 'End all sessions',
  });
  if (!answer) return;
  const result = await act($('act-sessions'), 'DELETE', '/sessions');
  if (!result) return;
  if (result.status === 204) {
    if (self) return showSignin('Your sessions have ended. Sign in again.');
    say(message, 'ok', `Every session of ${user.email} has ended.`);
    await redraw();
  } else {
    say(message, 'error', problem(result, 'ending the sessions'));
  }
});

$('act-mfa').addEventListener('click', async () => {
  const user = shown;
  const answer = await confirmAction({
    title: 'Remove second factors?',
    text: `Two-step sign-in is turned off for ${who(user)}, and their recovery codes and passkeys are removed. They are mailed a notice.`,
    ok: 'Remove them',
  });
  if (!answer) return;
  const result = await act($('act-mfa'), 'DELETE', '/mfa');
  if (!result) return;
  if (result.status === 204) {
    say(message, 'ok', `The second factors of ${user.email} are removed.`);
    await redraw();
  } else {
    say(message, 'error', problem(result, 'removing the second factors'));
  }
});

for (const [id, suffix, what] of [
  ['act-reset', '/password-reset', 'A password-reset mail'],
  ['act-verify', '/verification', 'A verification mail'],
]) {
  $(id).addEventListener('click', async () => {
    const user = shown;
    const result = await act($(id), 'POST', suffix, {});
    if (!result) return;
    if (result.status === 202 || result.status === 200)
      say(message, 'ok', `${what} is on its way to ${user.email}.`);
    else say(message, 'error', problem(result, 'sending the mail'));
  });
}

$('role-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const user = shown;
  const role = $('role-select').value;
  if (role === user.role) {
    say(message, 'info', `${user.email} already has the role ${roleName(role)}.`);
    return;
  }
  const self = String(user.id) === String(me.id);
  const answer = await confirmAction({
    title: 'Change the role?',
    text:
      `${who(user)}: ${roleName(user.role)} to ${roleName(role)}.` +
      (self ? ' This is your own account: you may lose access to parts of this console.' : ''),
    ok: 'Change role',
  });
  if (!answer) return;
  const result = await act($('role-submit'), 'PATCH', '', { role });
  if (!result) return;
  if (result.status === 200) {
    drawUser(result.body);
    say(message, 'ok', `${user.email} now has the role ${roleName(result.body.role)}.`);
    if (self) await load();
  } else {
    $('role-select').value = user.role;
    say(message, 'error', problem(result, 'changing the role'));
  }
});

$('act-delete').addEventListener('click', async () => {
  const user = shown;
  const answer = await confirmAction({
    title: 'Delete this account?',
    text: `${who(user)} and everything of theirs is deleted for good. This cannot be undone.`,
    ok: 'Delete',
    typed: user.email,
  });
  if (!answer) return;
  const result = await act($('act-delete'), 'DELETE', '');
  if (!result) return;
  if (result.status === 204) {
    shown = null;
    go(lastSearch ? searchHash(lastSearch) : '#search', ['ok', `${user.email} is deleted.`]);
  } else {
    say(message, 'error', problem(result, 'deleting'));
  }
});

// ---- inviting ------------------------------------------------------------------------------------------

$('invite').addEventListener('submit', async (event) => {
  event.preventDefault();
  const email = $('invite-email').value.trim();
  const name = $('invite-name').value.trim();
  if (!email || !name) {
    say(message, 'error', 'Enter the email and the name of the person to invite.');
    return;
  }
  const button = $('invite-submit');
  button.disabled = true;
  const answer = await api('POST', '/api/admin/users', { email, name });
  button.disabled = false;
  if (signedOut(answer)) return;
  if (answer.status === 201 && answer.body) {
    $('invite-email').value = '';
    $('invite-name').value = '';
    shown = null;
    go(`#user=${encodeURIComponent(answer.body.id)}`, [
      'ok',
      `${answer.body.email} is invited: a mail with a link to set a password is on its way.`,
    ]);
  } else {
    say(message, 'error', problem(answer, 'the invitation'));
  }
});

load();
