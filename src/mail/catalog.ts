// What each message Usher sends is made of, and the arguments its texts may use. Texts are ICU
// MessageFormat (plural, select, date, time, number), one catalog per language (texts/*.ts), and an
// operator's own in MAIL_TEMPLATES_DIR (operator-templates.ts) are checked against the same lists.
import { type MessageFormatElement, parse, TYPE } from '@formatjs/icu-messageformat-parser';

export const MESSAGE_IDS = [
  'passwordReset',
  'verifyEmail',
  'passkeyAdded',
  'passkeyRemoved',
  'identityLinked',
  'identityUnlinked',
  'accountDeleted',
  'passwordChanged',
  'emailChanged',
  'test',
  'totpEnabled',
  'totpDisabled',
  'recoveryCodeUsed',
  'secondFactorFailures',
  'invitation',
  'secondFactorsRemoved',
  'signinLink',
  'signinCode',
] as const;
export type MessageId = (typeof MESSAGE_IDS)[number];

/**
 * Arguments every text of every message has: `name` (the greeting's; empty when the mail goes to an
 * address not proven yet, so that nothing a stranger typed is mailed) with `hasName` (`yes` or
 * `no`) to select on, `email` (the recipient) and `at` (when the message was made, a date).
 */
export const COMMON_ARGS = ['name', 'hasName', 'email', 'at'] as const;

/**
 * A link's or code's validity: `validity` written out for the language ("30 minutes", "1 Stunde",
 * "7 jours"), or `ttlAmount` with `ttlUnit` (`minute`, `hour` or `day`) to write it otherwise, and
 * `expiresAt` (a date).
 */
const VALIDITY_ARGS = ['validity', 'ttlAmount', 'ttlUnit', 'expiresAt'] as const;

interface MessageSpec {
  /** The arguments beyond COMMON_ARGS. */
  readonly args: readonly string[];
  /** The message carries a link (`url`): it has an `action` text, the link's label. */
  readonly link: boolean;
}

export const MESSAGE_SPECS: Record<MessageId, MessageSpec> = {
  passwordReset: { args: ['url', ...VALIDITY_ARGS], link: true },
  verifyEmail: { args: ['url', ...VALIDITY_ARGS], link: true },
  passkeyAdded: { args: ['passkeyName', 'hasPasskeyName'], link: false },
  passkeyRemoved: { args: ['passkeyName', 'hasPasskeyName'], link: false },
  identityLinked: { args: ['provider'], link: false },
  identityUnlinked: { args: ['provider'], link: false },
  accountDeleted: { args: [], link: false },
  passwordChanged: { args: [], link: false },
  emailChanged: { args: ['newEmail', 'hasNewEmail'], link: false },
  test: { args: [], link: false },
  totpEnabled: { args: [], link: false },
  totpDisabled: { args: [], link: false },
  recoveryCodeUsed: { args: ['left'], link: false },
  secondFactorFailures: { args: ['failures'], link: false },
  invitation: { args: ['url', ...VALIDITY_ARGS], link: true },
  secondFactorsRemoved: { args: [], link: false },
  signinLink: { args: ['url', ...VALIDITY_ARGS], link: true },
  signinCode: { args: ['code', ...VALIDITY_ARGS], link: false },
};

/** The arguments that are numbers and dates; every other one is a string. */
const NUMBER_ARGS = new Set(['left', 'failures', 'ttlAmount']);
const DATE_ARGS = new Set(['at', 'expiresAt']);
/** The arguments that are `yes` or `no`, and `ttlUnit`'s values: what a select may branch on. */
const SELECT_VALUES: Record<string, readonly string[]> = {
  hasName: ['yes', 'no'],
  hasPasskeyName: ['yes', 'no'],
  hasNewEmail: ['yes', 'no'],
  ttlUnit: ['minute', 'hour', 'day'],
};

/** A message's own texts: its subject, its paragraphs (separated by blank lines), a link's label. */
export interface MessageTexts {
  subject: string;
  body: string;
  /** The label of the message's link: only, and always, for messages with one. */
  action?: string;
}

/** One language's texts of every message, and the lines they share. */
export interface MailCatalog {
  /** The first line; arguments: COMMON_ARGS. */
  greeting: string;
  /** The link written out in the text part, after the paragraphs: `{action}` (its label) and `{url}`. */
  linkLine: string;
  /** The last line. */
  closing: string;
  messages: Record<MessageId, MessageTexts>;
}

/** The parts of a message a text may replace, and what each is for. */
export type MessagePart = 'subject' | 'body' | 'action' | 'text' | 'html';
export type CommonPart = 'greeting' | 'linkLine' | 'closing';
export const COMMON_PARTS: readonly CommonPart[] = ['greeting', 'linkLine', 'closing'];

export const isMessageId = (id: string): id is MessageId => (MESSAGE_IDS as readonly string[]).includes(id);

/** Every argument a text of `id` may use (for the common lines, `part` says which). */
export function argumentsOf(id: MessageId | 'common', part?: string): string[] {
  if (id !== 'common') return [...COMMON_ARGS, ...MESSAGE_SPECS[id].args];
  return part === 'linkLine' ? [...COMMON_ARGS, 'action', 'url'] : [...COMMON_ARGS];
}

/** Tags are text: `<b>` in a mail's text is written as it is, and HTML templates are HTML as they stand. */
export const PARSE_OPTIONS = { ignoreTag: true, requiresOtherClause: true } as const;

/** Parses ICU MessageFormat; throws the parser's error (with its location) when it does not parse. */
export function parseText(text: string): MessageFormatElement[] {
  return parse(text, PARSE_OPTIONS);
}

/** The argument names an ICU text uses, nested plural and select branches included. */
export function usedArguments(
  elements: readonly MessageFormatElement[],
  into = new Set<string>(),
): Set<string> {
  for (const element of elements) {
    switch (element.type) {
      case TYPE.argument:
      case TYPE.number:
      case TYPE.date:
      case TYPE.time:
        into.add(element.value);
        break;
      case TYPE.select:
      case TYPE.plural:
        into.add(element.value);
        for (const option of Object.values(element.options)) usedArguments(option.value, into);
        break;
      case TYPE.tag:
        usedArguments(element.children, into);
        break;
      default:
        break;
    }
  }
  return into;
}

/**
 * What an argument is used as, where that does not fit what it is: a select on a number, a
 * plural on a string, a select branch no value ever takes. Each problem as a sentence; none: [].
 */
export function misusedArguments(elements: readonly MessageFormatElement[]): string[] {
  const problems: string[] = [];
  const walk = (list: readonly MessageFormatElement[]) => {
    for (const element of list) {
      if (element.type === TYPE.plural && !NUMBER_ARGS.has(element.value))
        problems.push(`{${element.value}} is not a number: it cannot be a plural`);
      if ((element.type === TYPE.date || element.type === TYPE.time) && !DATE_ARGS.has(element.value))
        problems.push(`{${element.value}} is not a date`);
      if (element.type === TYPE.number && !NUMBER_ARGS.has(element.value))
        problems.push(`{${element.value}} is not a number`);
      if (element.type === TYPE.select) {
        const values = SELECT_VALUES[element.value];
        if (values === undefined) problems.push(`{${element.value}} has no fixed values to select on`);
        else
          for (const key of Object.keys(element.options))
            if (key !== 'other' && !values.includes(key))
              problems.push(`{${element.value}} is never "${key}" (it is one of ${values.join(', ')})`);
      }
      if (element.type === TYPE.select || element.type === TYPE.plural)
        for (const option of Object.values(element.options)) walk(option.value);
      if (element.type === TYPE.tag) walk(element.children);
    }
  };
  walk(elements);
  return problems;
}

/** Values of every argument of `id`, of the right kinds: what a text is tried with before it is accepted. */
export function sampleArguments(
  id: MessageId | 'common',
  part?: string,
): Record<string, string | number | Date> {
  const values: Record<string, string | number | Date> = {};
  for (const name of argumentsOf(id, part)) {
    values[name] = NUMBER_ARGS.has(name)
      ? 2
      : DATE_ARGS.has(name)
        ? new Date(0)
        : (SELECT_VALUES[name]?.[0] ?? `sample ${name}`);
  }
  return values;
}
