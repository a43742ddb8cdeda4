// The sign-in link page: sends the link's token to POST /api/signin/email-link/verify as soon as it
// opens, then goes where the link was asked to send the browser (Usher-Redirect-To). An account
// with two-step sign-in gets a ticket instead, finished with a code on the page it goes to
// (#second-factor=…, as after a provider sign-in).
import { apiMessage, INCOMPLETE, postJson, say, t, takeToken, UNREACHABLE, waitText } from './link.js';

const token = takeToken();
const heading = document.getElementById('heading');
const message = document.getElementById('message');
const retry = document.getElementById('retry');
const ask = document.getElementById('ask');

function finish(title, kind, lines) {
  heading.textContent = title;
  document.title = title;
  say(message, kind, ...lines);
}

/** Only a target on this origin or an absolute http(s) URL the server checked; else the account page. */
function target(answer) {
  const raw = answer.headers.get('usher-redirect-to') ?? '';
  try {
    const url = new URL(raw, location.origin);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url : new URL('/account', location.origin);
  } catch {
    return new URL('/account', location.origin);
  }
}

async function signIn() {
  retry.hidden = true;
  say(message, 'info', t('signingIn'));
  const answer = await postJson('/api/signin/email-link/verify', { token });
  if (answer.status === 200) {
    finish(t('signedIn'), 'ok', [t('signedInText')]);
    location.assign(target(answer).href);
    return;
  }
  const ticket = answer.headers.get('usher-second-factor-ticket');
  if (answer.status === 401 && ticket) {
    finish(t('oneMoreStep'), 'info', [t('oneMoreStepText')]);
    const next = target(answer);
    next.hash = `second-factor=${encodeURIComponent(ticket)}`;
    location.assign(next.href);
    return;
  }
  if (answer.status === 401 || answer.status === 400) {
    finish(t('linkInvalid'), 'error', [t('expired'), t('expiredHint')]);
    ask.hidden = false;
  } else if (answer.status === 403) {
    finish(t('notSignedIn'), 'error', [apiMessage(answer, 'cannotSignIn')]);
  } else {
    if (answer.status === 429) {
      say(message, 'error', t('tooMany', { when: waitText(answer.retryAfter) }));
    } else if (answer.status === 0) {
      say(message, 'error', UNREACHABLE);
    } else {
      say(message, 'error', t('failed'));
    }
    retry.hidden = false;
  }
}

ask.addEventListener('submit', async (event) => {
  event.preventDefault();
  const email = document.getElementById('email').value.trim();
  if (!email) {
    say(message, 'error', t('enterEmail'));
    return;
  }
  const button = document.getElementById('ask-submit');
  button.disabled = true;
  const answer = await postJson('/api/signin/email-link', { email });
  button.disabled = false;
  if (answer.status === 202) {
    ask.hidden = true;
    finish(t('checkMail'), 'ok', [t('checkMailText'), t('checkMailHint')]);
  } else if (answer.status === 429) {
    say(message, 'error', t('tooManyRequests', { when: waitText(answer.retryAfter) }));
  } else if (answer.status === 0) {
    say(message, 'error', UNREACHABLE);
  } else {
    say(message, 'error', t('validEmail'));
  }
});

if (token) {
  retry.addEventListener('click', signIn);
  signIn();
} else {
  finish(t('linkIncomplete'), 'error', INCOMPLETE);
  ask.hidden = false;
}
