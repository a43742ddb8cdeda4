// The verification page: sends the link's token to POST /api/email/verify as soon as it opens.
import { INCOMPLETE, postJson, say, t, takeToken, UNREACHABLE, waitText } from './link.js';

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
  say(message, 'info', t('confirming'));
  const answer = await postJson('/api/email/verify', { token });
  if (answer.status === 204) {
    finish(t('confirmed'), 'ok', [t('confirmedText'), t('closePage')]);
  } else if (answer.error === 'INVALID_TOKEN' || answer.message.startsWith('token: ')) {
    finish(t('linkInvalid'), 'error', [t('expired'), t('expiredHint')]);
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

if (token) {
  retry.addEventListener('click', verify);
  verify();
} else {
  finish(t('linkIncomplete'), 'error', INCOMPLETE);
}
