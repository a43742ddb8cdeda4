// What the pages share: their texts, taking the token out of a link, calling the API, showing an
// outcome. Text from the API only ever reaches the page through textContent, never as HTML.

/**
 * The page's texts in its language, which the server chose from Accept-Language and wrote into
 * the page as a JSON data block (inert: the CSP runs no inline script, and this is none).
 */
const TEXTS = JSON.parse(document.getElementById('texts')?.textContent || '{}');

/** The page's language (its <html lang>): what dates and counts are written for. */
export const lang = document.documentElement.lang || 'en';

/** A text of the page, `{name}` placeholders filled from `values`; the key itself if it has none. */
export function t(key, values = {}) {
  const text = typeof TEXTS[key] === 'string' ? TEXTS[key] : key;
  return text.replace(/\{(\w+)\}/g, (whole, name) => (name in values ? String(values[name]) : whole));
}

/**
 * An API error's message (English, like every message of the API) on an English page; on a page
 * in another language, the page's own words for it instead.
 */
export function apiMessage(answer, key) {
  return lang === 'en' && answer.message ? answer.message : t(key);
}

/**
 * The token from the link: `#token=…` (what Usher's mails use: a fragment is never sent to a server,
 * so it reaches no log and no Referer), or `?token=…` for apps that link that way. The address bar
 * is cleared at once, so the token is not left in the history or passed on by copy and paste.
 */
export function takeToken() {
  const token =
    new URLSearchParams(location.hash.slice(1)).get('token') ??
    new URLSearchParams(location.search).get('token') ??
    '';
  if (location.hash || location.search) history.replaceState(null, '', location.pathname);
  return token.trim();
}

/**
 * POSTs JSON and reads the answer as `{status, error, message, retryAfter, headers}`; status 0 when
 * the server could not be reached. Never throws.
 */
export async function postJson(path, body) {
  let response;
  try {
    response = await fetch(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  } catch {
    return { status: 0, error: '', message: '', retryAfter: 0, headers: new Headers() };
  }
  let error = '';
  let message = '';
  try {
    const json = await response.json();
    if (typeof json?.error === 'string') error = json.error;
    if (typeof json?.message === 'string') message = json.message;
  } catch {
    // 204, or a body that is not JSON (a proxy's error page): the status says enough.
  }
  const retryAfter = Number.parseInt(response.headers.get('retry-after') ?? '', 10);
  return {
    status: response.status,
    error,
    message,
    retryAfter: retryAfter > 0 ? retryAfter : 0,
    headers: response.headers,
  };
}

/** Shows an outcome, one paragraph per line; kind is 'ok', 'error' or 'info'. */
export function say(element, kind, ...lines) {
  element.replaceChildren(
    ...lines.map((line) => {
      const p = document.createElement('p');
      p.textContent = line;
      return p;
    }),
  );
  element.className = `message ${kind}`;
  // An error is announced at once by screen readers; progress and success politely.
  element.setAttribute('role', kind === 'error' ? 'alert' : 'status');
  element.hidden = false;
}

/** "in a minute", "in 15 minutes" (in the page's language): when a throttled request may be tried again. */
export function waitText(seconds) {
  if (!seconds) return t('later');
  const minutes = Math.ceil(seconds / 60);
  return minutes <= 1
    ? t('inAMinute')
    : new Intl.RelativeTimeFormat(lang, { numeric: 'always' }).format(minutes, 'minute');
}

export const INCOMPLETE = [t('incomplete'), t('incompleteHint')];
export const UNREACHABLE = t('unreachable');
