// The console for support staff and administrators (GET /admin, issues 29 and 30): find users, look
// at one (details, sessions, sign-in methods, linked accounts, recent activity), and act on them
// through the admin API with the session cookie; read the audit log; and (admins) manage webhooks
// and their deliveries. Support users see only what their role may do (read, end sessions, send
// mails). Where the console is (a search, a user, the audit log's filters, a webhook) lives in the
// address's fragment, which a browser never sends: an email searched for reaches no access log,
// and Back and links work. Text from the API only ever reaches the page through textContent,
// never as HTML.
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

/** The fields that hold ids. */
const ID_KEYS = new Set(['id', 'actorId', 'userId']);

/**
 * Ids are 64-bit integers, written as exact JSON numbers: one past 2^53 would be rounded by a plain
 * parse, so such an id is kept as the text it was sent as (where the browser shows the reviver it).
 */
function exactIds(key, value, context) {
  if (ID_KEYS.has(key) && typeof value === 'number' && !Number.isSafeInteger(value) && context?.source) {
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
/** To the second, for the audit log and deliveries. */
const exactly = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const stamp = (iso) => (iso ? exactly.format(new Date(iso)) : 'Never');

/** The collection conventions' Link header, as `{rel: page number}` (first, prev, next, last). */
function pageLinks(answer) {
  const pages = {};
  for (const part of (answer.headers.get('link') ?? '').split(',')) {
    const match = /<([^>]*)>\s*;\s*rel="?([a-z]+)"?/.exec(part);
    if (!match) continue;
    const page = Number.parseInt(new URL(match[1], location.href).searchParams.get('page') ?? '', 10);
    if (page >= 1) pages[match[2]] = page;
  }
  return pages;
}

/** X-Total-Count, or `fallback` when the header is missing. */
function totalCount(answer, fallback) {
  const total = Number.parseInt(answer.headers.get('x-total-count') ?? '', 10);
  return Number.isSafeInteger(total) && total >= 0 ? total : fallback;
}

/** A number of things: "1 record", "2,345 records". */
const counted = (n, one, many) => (n === 1 ? `1 ${one}` : `${n.toLocaleString()} ${many}`);

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
const VIEWS = [
  'signin',
  'denied',
  'search-view',
  'user-view',
  'invite-view',
  'audit-view',
  'webhooks-view',
  'deliveries-view',
];
/** The console's link that leads to each view (a user's view has none). */
const NAV = {
  'search-view': 'nav-search',
  'invite-view': 'nav-invite',
  'audit-view': 'nav-audit',
  'webhooks-view': 'nav-webhooks',
  'deliveries-view': 'nav-webhooks',
};

function show(view) {
  for (const id of VIEWS) $(id).hidden = id !== view;
  const inConsole = view !== 'signin' && view !== 'denied';
  $('nav').hidden = !inConsole;
  $('me').hidden = !(inConsole || view === 'denied');
  for (const link of $('nav').querySelectorAll('a')) link.removeAttribute('aria-current');
  if (NAV[view]) $(NAV[view]).setAttribute('aria-current', 'page');
}

// ---- who is signed in ----------------------------------------------------------------------------

/** The signed-in user: `{id, email, name, role}`, or null. */
let me = null;
const isAdmin = () => me?.role === 'admin';

/** Shows the sign-in form; `text`, when given, says why. */
function showSignin(text) {
  me = null;
  forgetSecret();
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
  // Webhooks are for admins: a support user is not offered them (and is told so at #webhooks).
  $('nav-webhooks').hidden = !isAdmin();
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
// #search&q=…&status=…&verified=…&role=…&sort=…&page=…&size=…, #user=ID, #invite,
// #audit&type=…&userId=…&since=…&until=…&page=…&size=…, #webhooks, #webhook=ID&status=…&page=….
// Anything else: a search.

const FILTERS = ['q', 'status', 'verified', 'role', 'sort'];
const SIZES = ['20', '50', '100'];

/** An id as the API writes it: 1 to 19 digits. */
const ID = /^[1-9][0-9]{0,18}$/;

function place() {
  const params = new URLSearchParams(location.hash.slice(1));
  const user = params.get('user');
  if (user !== null && ID.test(user)) return { view: 'user', id: user };
  if (params.has('invite')) return { view: 'invite', search: searchIn(new URLSearchParams()) };
  if (params.has('audit')) return { view: 'audit', audit: auditIn(params) };
  if (params.has('webhooks')) return { view: 'webhooks' };
  const webhook = params.get('webhook');
  if (webhook !== null && ID.test(webhook))
    return { view: 'deliveries', deliveries: deliveriesIn(webhook, params) };
  return { view: 'search', search: searchIn(params) };
}

/** The page a fragment names: 1 unless it names a whole number from 1. */
function pageIn(params) {
  const page = Number.parseInt(params.get('page') ?? '1', 10);
  return Number.isSafeInteger(page) && page >= 1 ? page : 1;
}

/** The search a fragment's parameters describe, with the defaults for what they leave out. */
function searchIn(params) {
  const search = {};
  for (const key of FILTERS) search[key] = params.get(key) ?? '';
  search.page = pageIn(params);
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
  // A new webhook's secret is shown once: going anywhere takes it off the page.
  forgetSecret();
  const where = place();
  const before = drawn;
  drawn = where.view;
  if (where.view === 'user') {
    await showUser(where.id, before !== 'user');
  } else if (where.view === 'invite' && isAdmin()) {
    show('invite-view');
    document.title = 'Invite a user: Usher console';
    if (before !== 'invite') $('invite-email').focus();
  } else if (where.view === 'audit') {
    show('audit-view');
    document.title = 'Audit log: Usher console';
    await runAudit(where.audit, before !== 'audit');
  } else if (where.view === 'webhooks') {
    await showWebhooks(before !== 'webhooks');
  } else if (where.view === 'deliveries') {
    await showDeliveries(
      where.deliveries,
      before !== 'deliveries' || lastDeliveries?.id !== where.deliveries.id,
    );
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
  // The button stays enabled while a search runs: disabled, it would also swallow Enter in the
  // query box (a form with a disabled default button has no implicit submission), and a newer
  // search already replaces an older one's answer (`searches`).
  const mine = ++searches;
  resultsStatus.textContent = 'Searching…';
  const answer = await api('GET', `/api/admin/users?${query}`);
  if (mine !== searches) return;
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
    for (const list of ['details', 'sessions', 'factors', 'identities', 'user-badges', 'activity-body'])
      $(list).replaceChildren();
    $('activity').hidden = true;
    $('activity-status').textContent = '';
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

  // Every change made here is audited: the user's records are read afresh with each drawing.
  loadActivity(user);
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

// ---- the audit log -----------------------------------------------------------------------------------

const AUDIT_FILTERS = ['type', 'userId', 'since', 'until'];
/** The field of each filter. */
const AUDIT_FIELDS = { type: 'audit-type', userId: 'audit-user', since: 'audit-since', until: 'audit-until' };
const AUDIT_SIZE = '50';
/** A type, or its leading dotted part (as the API accepts it). */
const TYPE = /^[a-z_]{1,32}(\.[a-z_]{1,32}){0,3}$/;
/** How many of a user's records their view shows. */
const ACTIVITY_SIZE = 10;

/** The audit search a fragment's parameters describe (times as this device's local time). */
function auditIn(params) {
  const audit = {};
  for (const key of AUDIT_FILTERS) audit[key] = (params.get(key) ?? '').trim();
  audit.page = pageIn(params);
  audit.size = SIZES.includes(params.get('size') ?? '') ? params.get('size') : AUDIT_SIZE;
  return audit;
}

function auditHash(audit) {
  const params = new URLSearchParams([['audit', '']]);
  for (const key of AUDIT_FILTERS) if (audit[key]) params.set(key, audit[key]);
  if (audit.page > 1) params.set('page', String(audit.page));
  if (audit.size !== AUDIT_SIZE) params.set('size', audit.size);
  return `#${params.toString().replace(/^audit=/, 'audit')}`;
}

function formAudit() {
  const audit = { page: 1, size: $('audit-size').value };
  for (const key of AUDIT_FILTERS) audit[key] = $(AUDIT_FIELDS[key]).value.trim();
  return audit;
}

/**
 * The API's query for an audit search, or `{field, text}` when a filter is not one the API takes
 * (said in words here rather than with the schema's pattern).
 */
function auditQuery(audit) {
  const query = new URLSearchParams();
  const type = audit.type.toLowerCase();
  if (type && !TYPE.test(type))
    return { field: 'type', text: 'Type: a type like signin.failed, or its first part, like signin.' };
  if (type) query.set('type', type);
  if (audit.userId && !ID.test(audit.userId))
    return { field: 'userId', text: 'User id: a whole number, like 42.' };
  if (audit.userId) query.set('userId', audit.userId);
  for (const [key, name] of [
    ['since', 'From'],
    ['until', 'Before'],
  ]) {
    if (!audit[key]) continue;
    // A datetime-local value is this device's time, as the person choosing it means it.
    const at = new Date(audit[key]);
    if (Number.isNaN(at.getTime())) return { field: key, text: `${name}: not a date and time.` };
    query.set(key, at.toISOString());
  }
  query.set('page', String(audit.page));
  query.set('size', audit.size);
  return { query };
}

const auditStatus = $('audit-status');
/** The audit search drawn last, and the pages its Link header offers. */
let lastAudit = null;
let auditPages = {};
/** Counts audit searches: an answer that comes after a newer one was asked for is dropped. */
let audits = 0;

$('audit-form').addEventListener('submit', (event) => {
  event.preventDefault();
  message.hidden = true;
  go(auditHash(formAudit()));
});
$('audit-size').addEventListener('change', () => go(auditHash(formAudit())));
$('audit-clear').addEventListener('click', () => {
  message.hidden = true;
  go(auditHash({ type: '', userId: '', since: '', until: '', page: 1, size: $('audit-size').value }));
  $('audit-type').focus();
});
$('audit-prev').addEventListener('click', () => {
  if (lastAudit && auditPages.prev) go(auditHash({ ...lastAudit, page: auditPages.prev }));
});
$('audit-next').addEventListener('click', () => {
  if (lastAudit && auditPages.next) go(auditHash({ ...lastAudit, page: auditPages.next }));
});

function clearAudit() {
  auditStatus.textContent = '';
  $('audit').hidden = true;
  $('audit-body').replaceChildren();
  $('audit-pager').hidden = true;
}

async function runAudit(audit, focusHeading) {
  for (const key of AUDIT_FILTERS) {
    $(AUDIT_FIELDS[key]).value = audit[key];
    $(AUDIT_FIELDS[key]).removeAttribute('aria-invalid');
  }
  $('audit-size').value = audit.size;
  lastAudit = audit;
  if (focusHeading) $('audit-title').focus();
  const mine = ++audits;
  const asked = auditQuery(audit);
  if (!asked.query) {
    clearAudit();
    $(AUDIT_FIELDS[asked.field]).setAttribute('aria-invalid', 'true');
    say(message, 'error', asked.text);
    return;
  }
  // Not disabled while loading, as for the user search: Enter in a field must still ask again.
  auditStatus.textContent = 'Loading…';
  const answer = await api('GET', `/api/admin/audit?${asked.query}`);
  if (mine !== audits) return;
  if (signedOut(answer)) return;
  if (answer.status !== 200 || !Array.isArray(answer.body)) {
    clearAudit();
    say(message, 'error', problem(answer, 'reading the audit log'));
    return;
  }
  const records = answer.body;
  const total = totalCount(answer, records.length);
  const capped = answer.headers.get('x-total-count-capped') === 'true';
  auditPages = pageLinks(answer);
  $('audit-body').replaceChildren(...records.map((record) => auditRow(record, true)));
  $('audit').hidden = records.length === 0;
  const size = Number(audit.size);
  const first = (audit.page - 1) * size + 1;
  const many = capped
    ? `More than ${counted(total, 'record', 'records')} match`
    : total === 1
      ? '1 record matches'
      : `${counted(total, 'record', 'records')} match`;
  if (total === 0) auditStatus.textContent = 'No records match.';
  else if (records.length === 0) auditStatus.textContent = `${many}; none on page ${audit.page}.`;
  else if (total <= size && audit.page === 1 && !capped) auditStatus.textContent = `${many}.`;
  else auditStatus.textContent = `${many}; showing ${first} to ${first + records.length - 1}.`;
  if (capped) auditStatus.textContent += ' Narrow the search to reach older ones.';
  $('audit-pager').hidden = !auditPages.prev && !auditPages.next && audit.page <= 1;
  $('audit-page-text').textContent = auditPages.last
    ? `Page ${audit.page} of ${Math.max(auditPages.last, audit.page)}`
    : `Page ${audit.page}`;
  $('audit-prev').disabled = !auditPages.prev;
  $('audit-next').disabled = !auditPages.next;
}

/** "none", for a screen reader; a dash, for the eye. */
function nothing() {
  const span = el('span', undefined, 'none');
  const dash = el('span', '—');
  dash.setAttribute('aria-hidden', 'true');
  span.append(dash, el('span', 'none', 'visually-hidden'));
  return span;
}

/** An account's id, as a link to its view; a dash for none. */
function userLink(id) {
  if (id === null || id === undefined) return nothing();
  const link = el('a', String(id));
  link.href = `#user=${encodeURIComponent(id)}`;
  return link;
}

/** A detail's value: as it is when it is one plain word, else as JSON (quoted, so spaces stay clear). */
const detailValue = (value) =>
  typeof value === 'string' && /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);

/** The details as `key=value key=value`; a dash for none. */
function detailsOf(details) {
  const entries = details && typeof details === 'object' ? Object.entries(details) : [];
  if (entries.length === 0) return nothing();
  return el('code', entries.map(([key, value]) => `${key}=${detailValue(value)}`).join(' '));
}

/** One record as a row: time, type, actor, the account (unless `withUser` is false), address, details. */
function auditRow(record, withUser) {
  const row = el('tr');
  const time = el('time', stamp(record.at));
  time.dateTime = record.at;
  time.title = record.at;
  const address = cell('address', el('span', 'From ', 'phone-label'));
  address.append(record.address ? el('span', record.address) : nothing());
  if (record.userAgent) {
    const agent = el('span', deviceName(record.userAgent), 'agent');
    agent.title = record.userAgent;
    address.append(agent);
  }
  row.append(
    cell('at', time),
    cell('type', el('code', record.type)),
    cell('actor', el('span', 'By ', 'phone-label'), userLink(record.actorId)),
    ...(withUser ? [cell('user', el('span', 'About ', 'phone-label'), userLink(record.userId))] : []),
    address,
    cell('record-details', detailsOf(record.details)),
  );
  return row;
}

// ---- a user's recent activity ------------------------------------------------------------------------

/** Counts loads of a user's records: one asked for later wins. */
let activities = 0;

async function loadActivity(user) {
  const mine = ++activities;
  $('activity-all').href = auditHash({
    type: '',
    userId: String(user.id),
    since: '',
    until: '',
    page: 1,
    size: AUDIT_SIZE,
  });
  $('activity-status').textContent = 'Loading…';
  const answer = await api(
    'GET',
    `/api/admin/audit?userId=${encodeURIComponent(user.id)}&size=${ACTIVITY_SIZE}`,
  );
  if (mine !== activities || String(shown?.id) !== String(user.id)) return;
  if (signedOut(answer)) return;
  if (answer.status !== 200 || !Array.isArray(answer.body)) {
    $('activity').hidden = true;
    $('activity-status').textContent = problem(answer, 'reading the audit log');
    return;
  }
  const records = answer.body;
  const total = totalCount(answer, records.length);
  $('activity-body').replaceChildren(...records.map((record) => auditRow(record, false)));
  $('activity').hidden = records.length === 0;
  $('activity-status').textContent =
    records.length === 0
      ? 'The audit log holds nothing about this account.'
      : total > records.length
        ? `The latest ${records.length} of ${counted(total, 'record', 'records')}, newest first.`
        : `${counted(total, 'record', 'records')}, newest first.`;
}

// ---- webhooks (admins) -------------------------------------------------------------------------------

const EVENT_COUNT = 11;
const webhooksStatus = $('webhooks-status');
/** Counts loads of the webhooks: one asked for later wins. */
let webhookLoads = 0;

/** A support user (or an admin no longer): the page says webhooks need an admin, and shows none. */
function webhooksDenied(answer) {
  show('webhooks-view');
  document.title = 'Webhooks: Usher console';
  forgetSecret();
  $('webhooks-admin').hidden = true;
  $('webhooks').replaceChildren();
  $('webhooks-denied').hidden = false;
  if (answer) {
    // Refused (403): this account is no longer an admin.
    $('nav-webhooks').hidden = true;
    say(message, 'error', problem(answer, 'reading the webhooks'));
  }
}

async function showWebhooks(focusHeading) {
  show('webhooks-view');
  document.title = 'Webhooks: Usher console';
  if (focusHeading) $('webhooks-title').focus();
  if (!isAdmin()) {
    webhooksDenied();
    return;
  }
  $('webhooks-denied').hidden = true;
  $('webhooks-admin').hidden = false;
  await loadWebhooks();
}

async function loadWebhooks() {
  const mine = ++webhookLoads;
  webhooksStatus.textContent = 'Loading…';
  const answer = await api('GET', '/api/admin/webhooks?size=100');
  if (mine !== webhookLoads) return;
  if (signedOut(answer)) return;
  if (answer.status === 403) return webhooksDenied(answer);
  if (answer.status !== 200 || !Array.isArray(answer.body)) {
    webhooksStatus.textContent = '';
    say(message, 'error', problem(answer, 'reading the webhooks'));
    return;
  }
  const webhooks = answer.body;
  const total = totalCount(answer, webhooks.length);
  $('webhooks').replaceChildren(...webhooks.map(webhookItem));
  if (webhooks.length === 0) $('webhooks').append(el('li', 'No webhooks yet.', 'empty'));
  webhooksStatus.textContent =
    total > webhooks.length
      ? `The first ${webhooks.length} of ${counted(total, 'webhook', 'webhooks')}.`
      : webhooks.length === 0
        ? ''
        : `${counted(total, 'webhook', 'webhooks')}.`;
}

const eventsText = (events) =>
  Array.isArray(events) && events.length === EVENT_COUNT
    ? 'Every event'
    : `Events: ${(events ?? []).join(', ')}`;

function webhookItem(webhook) {
  const li = item(webhook.url, eventsText(webhook.events), `Added ${date(webhook.createdAt)}`);
  li.classList.add('webhook');
  const actions = el('div', undefined, 'item-actions');
  const deliveries = el('a', 'Deliveries', 'button-link');
  deliveries.href = `#webhook=${encodeURIComponent(webhook.id)}`;
  deliveries.setAttribute('aria-label', `Deliveries to ${webhook.url}`);
  const remove = el('button', 'Delete', 'danger small');
  remove.type = 'button';
  remove.setAttribute('aria-label', `Delete the webhook to ${webhook.url}`);
  remove.addEventListener('click', () => deleteWebhook(webhook, remove));
  actions.append(deliveries, remove);
  li.append(actions);
  return li;
}

const eventBoxes = () => [...$('webhook-events').querySelectorAll('input[type="checkbox"]')];

$('webhook-all').addEventListener('click', () => {
  for (const box of eventBoxes()) box.checked = true;
});

$('webhook-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const field = $('webhook-url');
  const url = field.value.trim();
  const events = eventBoxes()
    .filter((box) => box.checked)
    .map((box) => box.value);
  field.removeAttribute('aria-invalid');
  if (!url) {
    field.setAttribute('aria-invalid', 'true');
    say(message, 'error', 'Enter the URL of the receiver.');
    field.focus();
    return;
  }
  if (events.length === 0) {
    say(message, 'error', 'Choose at least one event to send.');
    eventBoxes()[0].focus();
    return;
  }
  const button = $('webhook-submit');
  button.disabled = true;
  const answer = await api('POST', '/api/admin/webhooks', { url, events });
  button.disabled = false;
  if (signedOut(answer)) return;
  if (answer.status === 403) return webhooksDenied(answer);
  if (answer.status === 201 && typeof answer.body?.secret === 'string') {
    field.value = '';
    for (const box of eventBoxes()) box.checked = false;
    say(message, 'ok', `The webhook to ${answer.body.url} is added.`);
    showSecret(answer.body);
    await loadWebhooks();
  } else {
    if (/\burl\b/i.test(answer.message)) field.setAttribute('aria-invalid', 'true');
    say(message, 'error', problem(answer, 'adding the webhook'));
  }
});

/** The new webhook's secret, shown this once: it is never read again, and leaves the page with it. */
function showSecret(webhook) {
  $('secret-url').textContent = webhook.url;
  $('secret-value').textContent = webhook.secret;
  $('secret').hidden = false;
  $('secret-title').focus();
}

function forgetSecret() {
  $('secret-value').textContent = '';
  $('secret-url').textContent = '';
  $('secret').hidden = true;
}

$('secret-copy').addEventListener('click', async () => {
  const secret = $('secret-value').textContent ?? '';
  let copied = false;
  try {
    await navigator.clipboard.writeText(secret);
    copied = true;
  } catch {
    // No clipboard here (a page not served over HTTPS, or refused): select it to be copied by hand.
    const range = document.createRange();
    range.selectNodeContents($('secret-value'));
    const selection = window.getSelection();
    selection?.removeAllRanges();
    selection?.addRange(range);
  }
  if (copied) say(message, 'ok', 'The secret is copied. Store it where your receiver reads it.');
  else say(message, 'info', 'The secret is selected: copy it with the keyboard or the menu.');
});

$('secret-done').addEventListener('click', () => {
  forgetSecret();
  message.hidden = true;
  $('webhook-url').focus();
});

async function deleteWebhook(webhook, button) {
  const answer = await confirmAction({
    title: 'Delete this webhook?',
    text: `Usher stops sending events to ${webhook.url}, and its deliveries go with it: pending ones are never sent.`,
    ok: 'Delete',
  });
  if (!answer) return;
  button.disabled = true;
  const result = await api('DELETE', `/api/admin/webhooks/${encodeURIComponent(webhook.id)}`);
  button.disabled = false;
  if (signedOut(result)) return;
  if (result.status === 403) return webhooksDenied(result);
  if (result.status === 204 || result.status === 404) {
    say(message, 'ok', `The webhook to ${webhook.url} is deleted.`);
    await loadWebhooks();
    $('webhook-list-title').focus();
  } else {
    say(message, 'error', problem(result, 'deleting the webhook'));
  }
}

// ---- a webhook's deliveries ----------------------------------------------------------------------------

const STATUSES = { pending: 'Pending', sent: 'Sent', failed: 'Failed' };
const DELIVERIES_SIZE = 20;
const deliveriesStatus = $('deliveries-status');
/** The deliveries drawn last (`{id, status, page}`), their webhook, and the pages the Link header offers. */
let lastDeliveries = null;
let deliveriesWebhook = null;
let deliveryPages = {};
/** Counts loads of deliveries: one asked for later wins. */
let deliveryLoads = 0;

function deliveriesIn(id, params) {
  const status = params.get('status') ?? '';
  return { id, status: Object.hasOwn(STATUSES, status) ? status : '', page: pageIn(params) };
}

function deliveriesHash(deliveries) {
  const params = new URLSearchParams([['webhook', deliveries.id]]);
  if (deliveries.status) params.set('status', deliveries.status);
  if (deliveries.page > 1) params.set('page', String(deliveries.page));
  return `#${params}`;
}

$('deliveries-form').addEventListener('submit', (event) => {
  event.preventDefault();
  if (lastDeliveries) go(deliveriesHash({ ...lastDeliveries, status: $('delivery-status').value }));
});
$('delivery-status').addEventListener('change', () => {
  if (lastDeliveries) go(deliveriesHash({ ...lastDeliveries, status: $('delivery-status').value, page: 1 }));
});
$('deliveries-prev').addEventListener('click', () => {
  if (lastDeliveries && deliveryPages.prev)
    go(deliveriesHash({ ...lastDeliveries, page: deliveryPages.prev }));
});
$('deliveries-next').addEventListener('click', () => {
  if (lastDeliveries && deliveryPages.next)
    go(deliveriesHash({ ...lastDeliveries, page: deliveryPages.next }));
});

async function showDeliveries(where, focusHeading) {
  if (!isAdmin()) {
    webhooksDenied();
    return;
  }
  show('deliveries-view');
  const another = lastDeliveries?.id !== where.id;
  lastDeliveries = where;
  $('delivery-status').value = where.status;
  if (another) {
    // Nothing of the last webhook stays on screen while this one loads.
    deliveriesWebhook = null;
    $('deliveries-title').textContent = 'Deliveries';
    $('deliveries-url').textContent = '';
    $('deliveries-events').textContent = '';
    $('deliveries').replaceChildren();
    $('deliveries-pager').hidden = true;
  }
  document.title = 'Deliveries: Usher console';
  if (focusHeading) $('deliveries-title').focus();
  const mine = ++deliveryLoads;
  const id = encodeURIComponent(where.id);
  const query = new URLSearchParams({ page: String(where.page), size: String(DELIVERIES_SIZE) });
  if (where.status) query.set('status', where.status);
  deliveriesStatus.textContent = 'Loading…';
  $('deliveries-refresh').disabled = true;
  const [webhook, answer] = await Promise.all([
    deliveriesWebhook ? { status: 200, body: deliveriesWebhook } : api('GET', `/api/admin/webhooks/${id}`),
    api('GET', `/api/admin/webhooks/${id}/deliveries?${query}`),
  ]);
  if (mine !== deliveryLoads) return;
  $('deliveries-refresh').disabled = false;
  if (signedOut(webhook) || signedOut(answer)) return;
  if (webhook.status === 403 || answer.status === 403) return webhooksDenied(answer);
  if (webhook.status !== 200 || answer.status !== 200 || !Array.isArray(answer.body)) {
    deliveriesStatus.textContent = '';
    $('deliveries').replaceChildren();
    $('deliveries-pager').hidden = true;
    if (webhook.status === 404) $('deliveries-title').textContent = 'Webhook not found';
    say(message, 'error', problem(webhook.status !== 200 ? webhook : answer, 'reading the deliveries'));
    return;
  }
  deliveriesWebhook = webhook.body;
  $('deliveries-title').textContent = 'Deliveries';
  $('deliveries-url').textContent = `To ${deliveriesWebhook.url}`;
  $('deliveries-events').textContent = eventsText(deliveriesWebhook.events);
  document.title = `Deliveries to ${deliveriesWebhook.url}: Usher console`;
  const deliveries = answer.body;
  const total = totalCount(answer, deliveries.length);
  deliveryPages = pageLinks(answer);
  $('deliveries').replaceChildren(...deliveries.map(deliveryItem));
  const which = where.status ? `${STATUSES[where.status].toLowerCase()} ` : '';
  const first = (where.page - 1) * DELIVERIES_SIZE + 1;
  if (total === 0) deliveriesStatus.textContent = `No ${which}deliveries.`;
  else if (deliveries.length === 0)
    deliveriesStatus.textContent = `${counted(total, `${which}delivery`, `${which}deliveries`)}; none on page ${where.page}.`;
  else if (total <= DELIVERIES_SIZE && where.page === 1)
    deliveriesStatus.textContent = `${counted(total, `${which}delivery`, `${which}deliveries`)}, newest first.`;
  else
    deliveriesStatus.textContent = `${counted(total, `${which}delivery`, `${which}deliveries`)}; showing ${first} to ${first + deliveries.length - 1}.`;
  $('deliveries-pager').hidden = !deliveryPages.prev && !deliveryPages.next && where.page <= 1;
  $('deliveries-page-text').textContent = deliveryPages.last
    ? `Page ${where.page} of ${Math.max(deliveryPages.last, where.page)}`
    : `Page ${where.page}`;
  $('deliveries-prev').disabled = !deliveryPages.prev;
  $('deliveries-next').disabled = !deliveryPages.next;
}

function deliveryBadge(status) {
  return el(
    'span',
    STATUSES[status] ?? status,
    status === 'sent' ? 'badge ok' : status === 'failed' ? 'badge warn' : 'badge',
  );
}

/** What the last attempt came to: "2 attempts, the last Nov 27, 2026, 7:18:20 PM: HTTP 503". */
function attemptsText(delivery) {
  if (!delivery.attempts) return 'Not tried yet';
  let text = counted(delivery.attempts, 'attempt', 'attempts');
  if (delivery.lastAttemptAt) text += `, the last ${stamp(delivery.lastAttemptAt)}`;
  if (delivery.lastStatus !== null && delivery.lastStatus !== undefined)
    text += `: HTTP ${delivery.lastStatus}`;
  return text;
}

function deliveryItem(delivery) {
  const li = el('li', undefined, 'item delivery');
  li.dataset.id = String(delivery.id);
  const text = el('div', undefined, 'item-text');
  const title = el('p', undefined, 'item-title');
  title.append(el('code', delivery.type), ' ', deliveryBadge(delivery.status));
  const about = el('p', 'About user ', 'item-detail');
  about.append(userLink(delivery.userId));
  text.append(title, about, el('p', `Queued ${stamp(delivery.createdAt)}`, 'item-detail'));
  text.append(el('p', attemptsText(delivery), 'item-detail'));
  if (delivery.lastError) text.append(el('p', `Last error: ${delivery.lastError}`, 'item-detail problem'));
  if (delivery.status === 'pending' && delivery.nextAttemptAt)
    text.append(el('p', `Next attempt ${stamp(delivery.nextAttemptAt)}`, 'item-detail'));
  if (delivery.status === 'failed')
    text.append(el('p', 'Given up: no 2xx answer within the retry window.', 'item-detail problem'));
  if (delivery.sentAt)
    text.append(
      el(
        'p',
        delivery.status === 'sent'
          ? `Delivered ${stamp(delivery.sentAt)}`
          : `Delivered before, ${stamp(delivery.sentAt)}: queued again`,
        'item-detail',
      ),
    );
  text.append(el('p', `Message id ${delivery.messageId}`, 'item-detail'));
  const payload = el('details', undefined, 'payload');
  payload.append(el('summary', 'Payload'), el('pre', JSON.stringify(delivery.payload, null, 2)));
  text.append(payload);
  li.append(text);
  // Failed and sent ones may be sent again; a pending one that was tried may be tried now.
  if (delivery.status !== 'pending' || delivery.attempts > 0) {
    const retry = el('button', 'Retry', 'secondary small');
    retry.type = 'button';
    retry.setAttribute(
      'aria-label',
      `Retry the ${delivery.type} delivery queued ${stamp(delivery.createdAt)}`,
    );
    retry.addEventListener('click', () => retryDelivery(delivery, li, retry));
    li.append(retry);
  }
  return li;
}

async function retryDelivery(delivery, li, button) {
  const webhook = lastDeliveries;
  if (!webhook) return;
  button.disabled = true;
  const answer = await api(
    'POST',
    `/api/admin/webhooks/${encodeURIComponent(webhook.id)}/deliveries/${encodeURIComponent(delivery.id)}/retry`,
  );
  button.disabled = false;
  if (signedOut(answer)) return;
  if (answer.status === 403) return webhooksDenied(answer);
  if (answer.status === 202 && answer.body) {
    const fresh = deliveryItem(answer.body);
    if (li.isConnected) li.replaceWith(fresh);
    say(
      message,
      'ok',
      `The ${delivery.type} delivery is queued again: Usher sends it shortly. Refresh to see how it went.`,
    );
    (fresh.querySelector('button') ?? $('deliveries-refresh')).focus();
  } else {
    say(message, 'error', problem(answer, 'retrying the delivery'));
  }
}

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
