// The reset page: a new password typed twice, sent with the link's token to POST /api/password/reset.
import { INCOMPLETE, postJson, say, takeToken, UNREACHABLE, waitText } from './link.js';

const token = takeToken();
const heading = document.getElementById('heading');
const message = document.getElementById('message');
const form = document.getElementById('reset');
const password = document.getElementById('password');
const confirm = document.getElementById('confirm');
const show = document.getElementById('show');
const submit = document.getElementById('submit');

const EXPIRED = ['This link has expired or was already used. Ask for a new one.'];

function finish(title, kind, lines) {
  form.hidden = true;
  heading.textContent = title;
  document.title = title;
  say(message, kind, ...lines);
}

/** The API's rule message ("password: must be 8 to 1024 characters") as a sentence. */
function ruleText(apiMessage) {
  const rule = apiMessage.slice('password: '.length).trim();
  return `Your new password ${rule}${/[.!?…]$/.test(rule) ? '' : '.'}`;
}

async function send() {
  if (password.value === '') {
    say(message, 'error', 'Type your new password.');
    password.focus();
    return;
  }
  if (password.value !== confirm.value) {
    say(message, 'error', 'The two passwords are not the same. Type the new password again in both fields.');
    confirm.setAttribute('aria-invalid', 'true');
    confirm.focus();
    return;
  }
  confirm.removeAttribute('aria-invalid');
  submit.disabled = true;
  submit.textContent = 'Changing…';
  message.hidden = true;
  const answer = await postJson('/api/password/reset', { token, password: password.value });
  submit.disabled = false;
  submit.textContent = 'Change password';

  if (answer.status === 204) {
    password.value = '';
    confirm.value = '';
    finish('Password changed', 'ok', [
      'Your password was changed. You can now sign in with it.',
      'For your safety, every session of your account was signed out, on every device.',
    ]);
  } else if (answer.error === 'INVALID_TOKEN' || answer.message.startsWith('token: ')) {
    finish('Link no longer valid', 'error', EXPIRED);
  } else if (answer.error === 'VALIDATION_FAILED' && answer.message.startsWith('password: ')) {
    say(message, 'error', ruleText(answer.message));
    password.focus();
  } else if (answer.status === 429) {
    say(message, 'error', `Too many attempts. Try again ${waitText(answer.retryAfter)}.`);
  } else if (answer.status === 0) {
    say(message, 'error', UNREACHABLE);
  } else {
    say(
      message,
      'error',
      'Something went wrong, and your password may not have been changed.',
      'Try again in a moment. If it keeps failing, ask for a new link.',
    );
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
  finish('Link incomplete', 'error', INCOMPLETE);
}
