// The reset page: a new password typed twice, sent with the link's token to POST /api/password/reset.
import { INCOMPLETE, lang, postJson, say, t, takeToken, UNREACHABLE, waitText } from './link.js';

const token = takeToken();
const heading = document.getElementById('heading');
const message = document.getElementById('message');
const form = document.getElementById('reset');
const password = document.getElementById('password');
const confirm = document.getElementById('confirm');
const show = document.getElementById('show');
const submit = document.getElementById('submit');

const EXPIRED = [t('expired')];

function finish(title, kind, lines) {
  form.hidden = true;
  heading.textContent = title;
  document.title = title;
  say(message, kind, ...lines);
}

/**
 * The API's rule message ("password: must be 8 to 1024 characters") as a sentence on an English
 * page; in another language, the rules in the page's own words (the API speaks English only).
 */
function ruleText(apiMessage) {
  if (lang !== 'en') return t('passwordRefused');
  const rule = apiMessage.slice('password: '.length).trim();
  return `Your new password ${rule}${/[.!?…]$/.test(rule) ? '' : '.'}`;
}

async function send() {
  if (password.value === '') {
    say(message, 'error', t('typePassword'));
    password.focus();
    return;
  }
  if (password.value !== confirm.value) {
    say(message, 'error', t('notSame'));
    confirm.setAttribute('aria-invalid', 'true');
    confirm.focus();
    return;
  }
  confirm.removeAttribute('aria-invalid');
  submit.disabled = true;
  submit.textContent = t('changing');
  message.hidden = true;
  const answer = await postJson('/api/password/reset', { token, password: password.value });
  submit.disabled = false;
  submit.textContent = t('changePassword');

  if (answer.status === 204) {
    password.value = '';
    confirm.value = '';
    finish(t('changed'), 'ok', [t('changedText'), t('signedOutEverywhere')]);
    document.getElementById('onward').hidden = false;
    document.getElementById('onward-link').focus();
  } else if (answer.error === 'INVALID_TOKEN' || answer.message.startsWith('token: ')) {
    finish(t('linkInvalid'), 'error', EXPIRED);
  } else if (answer.error === 'VALIDATION_FAILED' && answer.message.startsWith('password: ')) {
    say(message, 'error', ruleText(answer.message));
    password.focus();
  } else if (answer.status === 429) {
    say(message, 'error', t('tooMany', { when: waitText(answer.retryAfter) }));
  } else if (answer.status === 0) {
    say(message, 'error', UNREACHABLE);
  } else {
    say(message, 'error', t('failed'), t('failedHint'));
  }
}

if (token) {
  form.hidden = false;
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (!submit.disabled) send();
  });
  confirm.addEventListener('input', () => confirm.removeAttribute('aria-invalid'));
  show.addEventListener('change', () => {
    const type = show.checked ? 'text' : 'password';
    password.type = type;
    confirm.type = type;
  });
  password.focus();
} else {
  finish(t('linkIncomplete'), 'error', INCOMPLETE);
}
