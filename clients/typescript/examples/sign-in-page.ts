// A sign-in page with @usher/client, served from Usher's origin (profile B). Its HTML:
//   <form id="sign-in">
//     <input name="email" type="email" autocomplete="username" required>
//     <input name="password" type="password" autocomplete="current-password" required>
//     <input name="code" autocomplete="one-time-code" inputmode="numeric" hidden>
//     <button>Sign in</button>
//   </form>
//   <p id="status" role="status"></p>
//   <button id="sign-out" hidden>Sign out</button>
import { createUsherClient } from '@usher/client';

// Cookie mode (the default): the browser keeps the HttpOnly session cookie; the page never sees it.
const usher = createUsherClient({ profile: 'b' });

const form = document.querySelector<HTMLFormElement>('#sign-in')!;
const code = form.querySelector<HTMLInputElement>('[name=code]')!;
const status = document.querySelector<HTMLElement>('#status')!;
const signOut = document.querySelector<HTMLButtonElement>('#sign-out')!;

/** Asks Usher who is signed in: after a reload, the cookie is all the page has. */
async function showSession(): Promise<void> {
  const me = await usher.whoAmI();
  status.textContent = me.ok ? `Signed in as ${me.data.user.name}.` : 'Not signed in.';
  form.hidden = me.ok;
  signOut.hidden = !me.ok;
}

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  const fields = new FormData(form);
  const result = await usher.signIn({
    email: String(fields.get('email')),
    password: String(fields.get('password')),
    ...(code.hidden ? {} : { code: String(fields.get('code')) }),
  });
  if (result.ok) {
    form.reset();
    code.hidden = true;
    await showSession();
  } else if (result.secondFactor === 'totp') {
    code.hidden = false;
    status.textContent = 'Enter the code from your authenticator app.';
  } else if (result.status === 429) {
    status.textContent = `Too many attempts. Try again in ${Math.ceil((result.retryAfter ?? 60) / 60)} min.`;
  } else {
    // The same answer for an unknown email and a wrong password: Usher does not say which.
    status.textContent = result.status === 401 ? 'Wrong email or password.' : 'Sign-in failed; try again.';
  }
});

signOut.addEventListener('click', async () => {
  await usher.signOut();
  await showSession();
});

await showSession();
