// English: the language Usher is written in, and where every other language falls back.
import type { MailCatalog } from '../catalog.ts';

const IGNORE =
  'If you did not ask for this, you can ignore this message; nothing changes until the link is used.';
const NOT_YOU =
  'If this was not you, reset your password now with "Forgot password" and sign out your other sessions.';
const NOT_YOU_FACTOR =
  'If this was not you, someone has your password: reset it now with "Forgot password" and sign out your other sessions.';
const WHEN = 'This happened on {at, date, long} at {at, time, short}.';

export const en: MailCatalog = {
  greeting: '{hasName, select, yes {Hello {name},} other {Hello,}}',
  linkLine: '{action}:\n{url}',
  closing: '— Usher',
  messages: {
    passwordReset: {
      subject: 'Reset your password',
      body: `Someone asked to reset the password of the account with this email address.

The link below lets you choose a new password. It works once, for {validity}.

${IGNORE}`,
      action: 'Choose a new password',
    },
    verifyEmail: {
      subject: 'Confirm your email address',
      body: `Please confirm that this email address belongs to your account.

The link below works once, for {validity}.

${IGNORE}`,
      action: 'Confirm this email address',
    },
    passkeyAdded: {
      subject: 'A passkey was added to your account',
      body: `{hasPasskeyName, select, yes {A passkey named "{passkeyName}"} other {A passkey}} was just added to your account; it can sign in without your password. ${WHEN}

If this was not you, remove it from your account page now, and reset your password.`,
    },
    passkeyRemoved: {
      subject: 'A passkey was removed from your account',
      body: `{hasPasskeyName, select, yes {The passkey named "{passkeyName}"} other {A passkey}} was just removed from your account; it can no longer sign in. ${WHEN}

${NOT_YOU}`,
    },
    identityLinked: {
      subject: 'Your {provider} account was linked to your account',
      body: `A {provider} account was just linked to your account; it can now sign in to it. ${WHEN}

If this was not you, unlink it from your account page now, and reset your password.`,
    },
    identityUnlinked: {
      subject: 'A {provider} account was unlinked from your account',
      body: `A {provider} account was just unlinked from your account; it can no longer sign in to it. ${WHEN}

${NOT_YOU}`,
    },
    accountDeleted: {
      subject: 'Your account was deleted',
      body: `Your account was just deleted, with its sessions, passkeys, products and reviews. ${WHEN} Nothing more will be sent to this address about it.

If this was not you, someone had your password or a recent sign-in on one of your devices. A deleted account cannot be brought back, but this address can register again.`,
    },
    passwordChanged: {
      subject: 'Your password was changed',
      body: `The password of your account was just changed. ${WHEN}

${NOT_YOU}`,
    },
    emailChanged: {
      subject: 'The email address of your account was changed',
      body: `{hasNewEmail, select, yes {The email address of your account was just changed from this one to {newEmail}.} other {The email address of your account was just changed from this one to another.}} ${WHEN}

Messages about the account now go to the new address.

${NOT_YOU}`,
    },
    test: {
      subject: 'Test message from Usher',
      body: 'This is a test message from Usher: mail delivery works.',
    },
    totpEnabled: {
      subject: 'Two-step sign-in was turned on',
      body: `Two-step sign-in was turned on for your account on {at, date, long} at {at, time, short}. Signing in now needs a code from your authenticator app as well as your password.

Keep your recovery codes somewhere safe: each one signs you in once if you lose the app.

${NOT_YOU_FACTOR}`,
    },
    totpDisabled: {
      subject: 'Two-step sign-in was turned off',
      body: `Two-step sign-in was turned off for your account on {at, date, long} at {at, time, short}. Signing in now needs only your password; your recovery codes no longer work.

${NOT_YOU_FACTOR}`,
    },
    recoveryCodeUsed: {
      subject: 'A recovery code was used to sign in',
      body: `Someone signed in to your account on {at, date, long} at {at, time, short} with your password and one of your recovery codes.

That code will not work again; {left, plural, =0 {you have no unused recovery codes left} one {you have # unused recovery code left} other {you have # unused recovery codes left}}. To get new ones, turn two-step sign-in off and on again.

${NOT_YOU_FACTOR}`,
    },
    secondFactorFailures: {
      subject: 'Your password was used with wrong sign-in codes',
      body: `Someone signed in with your password and then gave {failures, plural, one {# wrong code} other {# wrong codes in a row}} from your authenticator app. Two-step sign-in stopped them, and further codes are now checked only after a growing delay. ${WHEN}

If this was not you, someone knows your password: change it now (a password reset works too), so that they cannot keep trying. Signing in from a device you have used before still works.`,
    },
    invitation: {
      subject: 'You are invited: choose your password',
      body: `An account was made for you with this email address. The link below lets you choose its password; it works once, for {validity}.

If you did not expect this invitation, you can ignore this message: without a password, nobody can sign in with it.`,
      action: 'Choose your password',
    },
    secondFactorsRemoved: {
      subject: 'Two-step sign-in and passkeys were removed from your account',
      body: `At a request to the service's support, two-step sign-in (TOTP), its recovery codes and the passkeys of your account were removed on {at, date, long} at {at, time, short}. Signing in now needs only your password or another linked way in.

If you did not ask for this, reset your password and contact support at once.`,
    },
    signinLink: {
      subject: 'Your sign-in link',
      body: `Someone asked to sign in with this email address. The link below signs you in; it works once, for {validity}.

If you did not ask for this, you can ignore this message: nobody can sign in without the link.`,
      action: 'Sign in',
    },
    signinCode: {
      subject: 'Your sign-in code: {code}',
      body: `Someone asked to sign in with this email address. Your sign-in code is {code}. It works once, for {validity}.

If you did not ask for this, you can ignore this message: nobody can sign in without the code. Never give it to anyone who asks for it.`,
    },
  },
};
