// A single-page app on its own origin that signs up, signs in and signs out with Usher through
// @usher/client in cookie mode: Usher keeps the session in an HttpOnly cookie the page never
// sees, and the browser sends it with every call (credentials: 'include'). For that, Usher lists
// this page's origin in CORS_ORIGINS, and the page and Usher share a site (app.example.com and
// auth.example.com; or 127.0.0.1 on two ports), since the cookie is SameSite=Lax.
import { createUsherClient, type User } from '@usher/client';
import './style.css';

// Usher's address, fixed at build time: VITE_USHER_URL=https://auth.example.com npm run build.
// The server's PROFILE is b (Usher's default).
const usher = createUsherClient({ profile: 'b', baseUrl: import.meta.env.VITE_USHER_URL ?? '' });

const element = <T extends HTMLElement>(selector: string) => document.querySelector<T>(selector)!;
const status = element('#status');
const signedIn = element('#signed-in');
const signedOut = element('#signed-out');
const signInForm = element<HTMLFormElement>('#sign-in');
const signUpForm = element<HTMLFormElement>('#sign-up');
const codeField = element('#code-field');

function show(user: User<'b'> | undefined, message?: string): void {
  signedIn.hidden = user === undefined;
  signedOut.hidden = user !== undefined;
  if (user) {
    element('#user-name').textContent = user.name;
    element('#user-email').textContent = user.email;
  }
  status.textContent = message ?? (user ? `Signed in as ${user.name}.` : 'Not signed in.');
}

/** Who is signed in: on load, the cookie (if any) is all the page has. */
async function refresh(): Promise<void> {
  const me = await usher.whoAmI();
  show(me.ok ? me.data.user : undefined);
}

function field(form: HTMLFormElement, name: string): string {
  return String(new FormData(form).get(name) ?? '');
}

async function signIn(email: string, password: string, code?: string): Promise<void> {
  const result = await usher.signIn({ email, password, ...(code ? { code } : {}) });
  if (result.ok) {
    signInForm.reset();
    signUpForm.reset();
    codeField.hidden = true;
    show(result.data);
  } else if (result.secondFactor === 'totp') {
    codeField.hidden = false;
    status.textContent = 'Enter the code from your authenticator app.';
  } else if (result.status === 429) {
    status.textContent = `Too many attempts. Try again in ${Math.ceil((result.retryAfter ?? 60) / 60)} min.`;
  } else {
    // The same answer for an unknown email and a wrong password: Usher does not say which.
    status.textContent = result.status === 401 ? 'Wrong email or password.' : 'Sign-in failed; try again.';
  }
}

signInForm.addEventListener('submit', async (event) => {
  event.preventDefault();
  const code = codeField.hidden ? undefined : field(signInForm, 'code');
  await signIn(field(signInForm, 'email'), field(signInForm, 'password'), code);
});

signUpForm.addEventListener('submit', async (event) => {
  event.preventDefault();
  const account = {
    name: field(signUpForm, 'name'),
    email: field(signUpForm, 'email'),
    password: field(signUpForm, 'password'),
  };
  const created = await usher.POST('/api/users', { body: account });
  if (created.ok) {
    // Registration makes the account; signing in makes the session.
    await signIn(account.email, account.password);
  } else if (created.status === 409) {
    status.textContent = 'That email already has an account: sign in instead.';
  } else if (created.status === 429) {
    status.textContent = 'Too many sign-ups from here; try again later.';
  } else {
    // 400 VALIDATION_FAILED says what is wrong (a password too short or too common, say).
    status.textContent = created.message ?? `Sign-up failed (${created.error}).`;
  }
});

element('#sign-out').addEventListener('click', async () => {
  await usher.signOut();
  show(undefined);
});

await refresh();
