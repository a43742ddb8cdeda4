// The verification page: sends the link's token to POST /api/email/verify as soon as it opens.
import { INCOMPLETE, postJson, say, takeToken, UNREACHABLE, waitText } from './link.js';

const token = takeToken();
const heading = document.getElementById('heading');
const message = document.getElementById('message');
const retry = document.getElementById('retry');

function finish(title, kind, lines) {
  heading.textContent = title;
  document.title = title;
  say(message, kind, ...lines);
}

async function verify() {
  retry.hidden = true;
  say(message, 'info', 'Confirming your email address…');
  const answer = await postJson('/api/email/verify', { token });
  if (answer.status === 204) {
    finish('Email address confirmed', 'ok', ['Your email address is confirmed.', 'You can close this page.']);
  } else if (answer.error === 'INVALID_TOKEN' || answer.message.startsWith('token: ')) {
    finish('Link no longer valid', 'error', [
      'This link has expired or was already used.',
      'If your address is not confirmed yet, sign in and ask for a new link.',
    ]);
  } else {
    if (answer.status === 429) {
      say(message, 'error', `Too many attempts. Try again ${waitText(answer.retryAfter)}.`);
    } else if (answer.status === 0) {
      say(message, 'error', UNREACHABLE);
    } else {
      say(
        message,
        'error',
        'Something went wrong, and your address is not confirmed yet. Try again in a moment.',
      );
    }
    retry.hidden = false;
  }
}

if (token) {
  retry.addEventListener('click', verify);
  verify();
} else {
  finish('Link incomplete', 'error', INCOMPLETE);
}
