// What both pages share: taking the token out of the link, calling the API, showing an outcome.
// Text from the API only ever reaches the page through textContent, never as HTML.

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

/** "in a minute", "in 15 minutes": when a throttled request may be tried again. */
export function waitText(seconds) {
  if (!seconds) return 'later';
  const minutes = Math.ceil(seconds / 60);
  return minutes <= 1 ? 'in a minute' : `in ${minutes} minutes`;
}

export const INCOMPLETE = [
  'This link is incomplete.',
  'Open the link in the mail again, or copy all of it into the address bar.',
];
export const UNREACHABLE = 'The server could not be reached. Check your connection and try again.';
