// Every message Usher sends: a subject that says what it is, and a plain-text and an HTML part
// with the same content and the link written out in full. Every value put into HTML is escaped:
// a user's name is whatever they typed at registration. Text a user chose (their name, a passkey's
// name, their new address) is passed only for mail to an address proven theirs (account-mail.ts):
// `undefined` leaves it out.
import type { OutgoingMessage } from './repository.ts';

const HTML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

interface Parts {
  to: string;
  subject: string;
  greeting: string;
  /** Paragraphs, plain text (escaped for the HTML part). */
  paragraphs: string[];
  link?: { label: string; url: string };
  closing: string;
}

function compose({ to, subject, greeting, paragraphs, link, closing }: Parts): OutgoingMessage {
  const text = [
    greeting,
    '',
    ...paragraphs.flatMap((p) => [p, '']),
    ...(link ? [`${link.label}:`, link.url, ''] : []),
    closing,
    '',
  ].join('\n');
  const html = [
    '<!doctype html>',
    '<html><body style="font-family: sans-serif; line-height: 1.5; color: #1f2328">',
    `<p>${escapeHtml(greeting)}</p>`,
    ...paragraphs.map((p) => `<p>${escapeHtml(p)}</p>`),
    ...(link
      ? [
          `<p><a href="${escapeHtml(link.url)}">${escapeHtml(link.label)}</a></p>`,
          `<p style="word-break: break-all">${escapeHtml(link.url)}</p>`,
        ]
      : []),
    `<p>${escapeHtml(closing)}</p>`,
    '</body></html>',
    '',
  ].join('\n');
  return { to, subject, text, html };
}

const hello = (name: string | undefined) => (name === undefined ? 'Hello,' : `Hello ${name},`);
const IGNORE =
  'If you did not ask for this, you can ignore this message; nothing changes until the link is used.';
const NOT_YOU =
  'If this was not you, reset your password now with "Forgot password" and sign out your other sessions.';
const CLOSING = '— Usher';

const duration = (ms: number) => {
  const minutes = Math.round(ms / 60_000);
  return minutes % 60 === 0 && minutes >= 60
    ? `${minutes / 60} hour${minutes === 60 ? '' : 's'}`
    : `${minutes} minute${minutes === 1 ? '' : 's'}`;
};

export function passwordResetMessage(
  to: string,
  name: string | undefined,
  url: string,
  ttlMs: number,
): OutgoingMessage {
  return compose({
    to,
    subject: 'Reset your password',
    greeting: hello(name),
    paragraphs: [
      'Someone asked to reset the password of the account with this email address.',
      `The link below lets you choose a new password. It works once, for ${duration(ttlMs)}.`,
      IGNORE,
    ],
    link: { label: 'Choose a new password', url },
    closing: CLOSING,
  });
}

/** Always to an address nobody has proven yet: nothing in it is the registrant's text. */
export function verifyEmailMessage(to: string, url: string, ttlMs: number): OutgoingMessage {
  return compose({
    to,
    subject: 'Confirm your email address',
    greeting: hello(undefined),
    paragraphs: [
      'Please confirm that this email address belongs to your account.',
      `The link below works once, for ${duration(ttlMs)}.`,
      IGNORE,
    ],
    link: { label: 'Confirm this email address', url },
    closing: CLOSING,
  });
}

export function passkeyAddedMessage(
  to: string,
  name: string | undefined,
  passkeyName: string | undefined,
): OutgoingMessage {
  const which = passkeyName === undefined ? 'A passkey' : `A passkey named "${passkeyName}"`;
  return compose({
    to,
    subject: 'A passkey was added to your account',
    greeting: hello(name),
    paragraphs: [
      `${which} was just added to your account; it can sign in without your password.`,
      'If this was not you, remove it from your account page now, and reset your password.',
    ],
    closing: CLOSING,
  });
}

export function identityLinkedMessage(
  to: string,
  name: string | undefined,
  provider: string,
): OutgoingMessage {
  return compose({
    to,
    subject: `Your ${provider} account was linked to your account`,
    greeting: hello(name),
    paragraphs: [
      `A ${provider} account was just linked to your account; it can now sign in to it.`,
      'If this was not you, unlink it from your account page now, and reset your password.',
    ],
    closing: CLOSING,
  });
}

export function identityUnlinkedMessage(
  to: string,
  name: string | undefined,
  provider: string,
): OutgoingMessage {
  return compose({
    to,
    subject: `A ${provider} account was unlinked from your account`,
    greeting: hello(name),
    paragraphs: [
      `A ${provider} account was just unlinked from your account; it can no longer sign in to it.`,
      NOT_YOU,
    ],
    closing: CLOSING,
  });
}

export function passkeyRemovedMessage(
  to: string,
  name: string | undefined,
  passkeyName: string | undefined,
): OutgoingMessage {
  const which = passkeyName === undefined ? 'A passkey' : `The passkey named "${passkeyName}"`;
  return compose({
    to,
    subject: 'A passkey was removed from your account',
    greeting: hello(name),
    paragraphs: [`${which} was just removed from your account; it can no longer sign in.`, NOT_YOU],
    closing: CLOSING,
  });
}

export function accountDeletedMessage(to: string, name: string | undefined): OutgoingMessage {
  return compose({
    to,
    subject: 'Your account was deleted',
    greeting: hello(name),
    paragraphs: [
      'Your account was just deleted, with its sessions, passkeys, products and reviews. Nothing more will be sent to this address about it.',
      'If this was not you, someone had your password or a recent sign-in on one of your devices. A deleted account cannot be brought back, but this address can register again.',
    ],
    closing: CLOSING,
  });
}

export function passwordChangedMessage(to: string, name: string | undefined): OutgoingMessage {
  return compose({
    to,
    subject: 'Your password was changed',
    greeting: hello(name),
    paragraphs: ['The password of your account was just changed.', NOT_YOU],
    closing: CLOSING,
  });
}

export function emailChangedMessage(
  to: string,
  name: string | undefined,
  newEmail: string | undefined,
): OutgoingMessage {
  return compose({
    to,
    subject: 'The email address of your account was changed',
    greeting: hello(name),
    paragraphs: [
      newEmail === undefined
        ? 'The email address of your account was just changed from this one to another.'
        : `The email address of your account was just changed from this one to ${newEmail}.`,
      'Messages about the account now go to the new address.',
      NOT_YOU,
    ],
    closing: CLOSING,
  });
}

export function testMessage(to: string): OutgoingMessage {
  return compose({
    to,
    subject: 'Test message from Usher',
    greeting: 'Hello,',
    paragraphs: ['This is a test message from Usher: mail delivery works.'],
    closing: CLOSING,
  });
}

const NOT_YOU_FACTOR =
  'If this was not you, someone has your password: reset it now with "Forgot password" and sign out your other sessions.';

export function totpEnabledMessage(to: string, name: string | undefined): OutgoingMessage {
  return compose({
    to,
    subject: 'Two-step sign-in was turned on',
    greeting: hello(name),
    paragraphs: [
      'Signing in to your account now needs a code from your authenticator app as well as your password.',
      'Keep your recovery codes somewhere safe: each one signs you in once if you lose the app.',
      NOT_YOU_FACTOR,
    ],
    closing: CLOSING,
  });
}

export function totpDisabledMessage(to: string, name: string | undefined): OutgoingMessage {
  return compose({
    to,
    subject: 'Two-step sign-in was turned off',
    greeting: hello(name),
    paragraphs: [
      'Signing in to your account now needs only your password; your recovery codes no longer work.',
      NOT_YOU_FACTOR,
    ],
    closing: CLOSING,
  });
}

export function recoveryCodeUsedMessage(to: string, name: string | undefined, left: number): OutgoingMessage {
  return compose({
    to,
    subject: 'A recovery code was used to sign in',
    greeting: hello(name),
    paragraphs: [
      'Someone just signed in to your account with your password and one of your recovery codes.',
      `That code will not work again; ${left} unused recovery code${left === 1 ? '' : 's'} left. To get new ones, turn two-step sign-in off and on again.`,
      NOT_YOU_FACTOR,
    ],
    closing: CLOSING,
  });
}

export function secondFactorFailuresMessage(
  to: string,
  name: string | undefined,
  failures: number,
): OutgoingMessage {
  return compose({
    to,
    subject: 'Your password was used with wrong sign-in codes',
    greeting: hello(name),
    paragraphs: [
      `Someone signed in with your password and then gave ${failures} wrong codes from your authenticator app in a row. Two-step sign-in stopped them, and further codes are now checked only after a growing delay.`,
      'If this was not you, someone knows your password: change it now (a password reset works too), so that they cannot keep trying. Signing in from a device you have used before still works.',
    ],
    closing: CLOSING,
  });
}

/**
 * An admin's invitation (CONTRACT "Administration"): a link to choose the account's first
 * password. The name is the admin's choice, not a stranger's, so it may be used to greet.
 */
export function invitationMessage(to: string, name: string, url: string, ttlMs: number): OutgoingMessage {
  return compose({
    to,
    subject: 'You are invited: choose your password',
    greeting: hello(name),
    paragraphs: [
      `An account was made for you with this email address. The link below lets you choose its password; it works once, for ${duration(ttlMs)}.`,
      'If you did not expect this invitation, you can ignore this message: without a password, nobody can sign in with it.',
    ],
    link: { label: 'Choose your password', url },
    closing: CLOSING,
  });
}

/** Support staff removed the account's second factors (the owner lost them). */
export function secondFactorsRemovedMessage(to: string, name: string | undefined): OutgoingMessage {
  return compose({
    to,
    subject: 'Two-step sign-in and passkeys were removed from your account',
    greeting: hello(name),
    paragraphs: [
      "At a request to the service's support, two-step sign-in (TOTP), its recovery codes and the passkeys of your account were removed. Signing in now needs only your password or another linked way in.",
      'If you did not ask for this, reset your password and contact support at once.',
    ],
    closing: CLOSING,
  });
}

/**
 * A sign-in link (CONTRACT "Sign-in by mail"). `name` is undefined for an address not proven yet,
 * and for an address with no account (EMAIL_SIGNIN_CREATES_ACCOUNTS): using the link proves it.
 */
export function signinLinkMessage(
  to: string,
  name: string | undefined,
  url: string,
  ttlMs: number,
): OutgoingMessage {
  return compose({
    to,
    subject: 'Your sign-in link',
    greeting: hello(name),
    paragraphs: [
      `Someone asked to sign in with this email address. The link below signs you in; it works once, for ${duration(ttlMs)}.`,
      'If you did not ask for this, you can ignore this message: nobody can sign in without the link.',
    ],
    link: { label: 'Sign in', url },
    closing: CLOSING,
  });
}

/** A sign-in code: the same rules for `name` as signinLinkMessage. */
export function signinCodeMessage(
  to: string,
  name: string | undefined,
  code: string,
  ttlMs: number,
): OutgoingMessage {
  return compose({
    to,
    subject: `Your sign-in code: ${code}`,
    greeting: hello(name),
    paragraphs: [
      `Someone asked to sign in with this email address. Your sign-in code is ${code}. It works once, for ${duration(ttlMs)}.`,
      'If you did not ask for this, you can ignore this message: nobody can sign in without the code. Never give it to anyone who asks for it.',
    ],
    closing: CLOSING,
  });
}
