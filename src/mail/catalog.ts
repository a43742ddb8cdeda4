// What a mail is made of, and the arguments its texts may use. The mail feature knows no mail by
// name: each feature that sends mail declares its own (`defineMails`, in the feature's mails.ts)
// with its texts in every built-in language, and the composition hands the list to MailTemplates
// (decision 380). Texts are ICU MessageFormat (plural, select, date, time, number); an operator's
// own in MAIL_TEMPLATES_DIR (operator-templates.ts) are checked against the same declarations.
import { type MessageFormatElement, parse, TYPE } from '@formatjs/icu-messageformat-parser';
import type { BuiltInLocale } from '../shared/locale.ts';

/**
 * Arguments every text of every message has: `name` (the greeting's; empty when the mail goes to an
 * address not proven yet, so that nothing a stranger typed is mailed) with `hasName` (`yes` or
 * `no`) to select on, `email` (the recipient) and `at` (when the message was made, a date).
 */
export const COMMON_ARGS = ['name', 'hasName', 'email', 'at'] as const;

/**
 * What a mail's own variable is: `text` a string; `number` a number (a plural may choose by it);
 * `optional` a string that may be absent, which gives two arguments, `x` (empty when absent) and
 * `hasX` (`yes` or `no`, to select on).
 */
export type VariableKind = 'text' | 'number' | 'optional';

/** How a feature declares one mail (defineMails). */
export interface MailSpec {
  /** The mail carries a link (`url`): its texts have an `action`, the link's label. */
  readonly link?: boolean;
  /** The link or code has a lifetime (`ttlMs` when sent): the validity arguments. */
  readonly lifetime?: boolean;
  /** Its own variables, in the order its arguments are listed to operators. */
  readonly variables?: Readonly<Record<string, VariableKind>>;
}

/** A mail's own texts: its subject, its paragraphs (separated by blank lines), a link's label. */
export interface MessageTexts {
  subject: string;
  body: string;
  /** The label of the message's link: only, and always, for messages with one. */
  action?: string;
}

type TextsOf<S extends MailSpec> = S['link'] extends true
  ? { readonly subject: string; readonly body: string; readonly action: string }
  : { readonly subject: string; readonly body: string; readonly action?: never };

type VariableValue<K> = K extends 'number' ? number : K extends 'optional' ? string | undefined : string;

/** The values a mail is sent with: its variables, and `url` for a link, `ttlMs` for a lifetime. */
export type ValuesOf<S extends MailSpec> = {
  readonly [N in keyof S['variables']]: VariableValue<S['variables'][N]>;
} & (S['link'] extends true ? { readonly url: string } : unknown) &
  (S['lifetime'] extends true ? { readonly ttlMs: number } : unknown);

/** One declared mail, as the mail feature reads it. */
export interface MailDefinition {
  /** Its name: the `<message>` of an operator's file names, unique among every feature's mails. */
  readonly kind: string;
  /** The feature that declared it, to name in errors. */
  readonly feature: string;
  readonly link: boolean;
  readonly lifetime: boolean;
  readonly variables: Readonly<Record<string, VariableKind>>;
  /** Its arguments beyond COMMON_ARGS, in order: `url`, its variables, the validity arguments. */
  readonly args: readonly string[];
  /** Its texts in every language Usher ships. */
  readonly texts: Readonly<Record<BuiltInLocale, MessageTexts>>;
}

/** A declared mail whose values are `V`: what senders pass to MailService.compose and AccountMail.send. */
export interface Mail<V> extends MailDefinition {
  /** Never set: it only ties the mail to its values' type (both ways, so neither may drift). */
  readonly valuesType?: (values: V) => V;
}

/** The recipient of one mail: `name` greets, undefined for no name (account-mail.ts says when). */
export interface Recipient {
  email: string;
  locale: string;
  name: string | undefined;
}

/** The `hasX` argument of an optional variable `x`. */
export const presence = (variable: string) => `has${variable[0]!.toUpperCase()}${variable.slice(1)}`;

const KIND = /^[A-Za-z]+$/;

/**
 * A feature's mails: `specs` says what each is made of, `texts` its texts in every built-in
 * language (the types ask for every language and mail, and an `action` exactly for a link).
 * Throws, at import, on a declaration that cannot work: a kind an operator's file could not be
 * named after, an argument named twice. (MailTemplates checks the texts once more at start.)
 */
export function defineMails<const S extends Readonly<Record<string, MailSpec>>>(
  feature: string,
  specs: S,
  texts: NoInfer<{ readonly [L in BuiltInLocale]: { readonly [K in keyof S]: TextsOf<S[K]> } }>,
): { readonly [K in keyof S & string]: Mail<ValuesOf<S[K]>> } {
  const mails: Record<string, MailDefinition> = {};
  for (const [kind, spec] of Object.entries(specs)) {
    const fail = (detail: string) => {
      throw new Error(`${feature}'s mail "${kind}": ${detail}`);
    };
    if (!KIND.test(kind) || kind === 'common')
      fail('a kind is letters only, and not "common" (it names operators\' template files)');
    const variables = spec.variables ?? {};
    const args = ownArguments(spec).map(([name]) => name);
    for (const [i, name] of args.entries())
      if ((COMMON_ARGS as readonly string[]).includes(name) || args.indexOf(name) !== i)
        fail(`the argument {${name}} is there twice (every mail has ${COMMON_ARGS.join(', ')})`);
    const own = Object.fromEntries(
      Object.entries(texts).map(([language, all]) => [language, (all as Record<string, MessageTexts>)[kind]]),
    ) as Record<BuiltInLocale, MessageTexts>;
    mails[kind] = {
      kind,
      feature,
      link: spec.link === true,
      lifetime: spec.lifetime === true,
      variables,
      args,
      texts: own,
    };
  }
  return mails as unknown as { readonly [K in keyof S & string]: Mail<ValuesOf<S[K]>> };
}

/** One language's lines shared by every mail: the layout (texts/*.ts). */
export interface MailLayout {
  /** The first line; arguments: COMMON_ARGS. */
  greeting: string;
  /** The link written out in the text part, after the paragraphs: `{action}` (its label) and `{url}`. */
  linkLine: string;
  /** The last line. */
  closing: string;
}

/** The parts of a message a text may replace, and what each is for. */
export type MessagePart = 'subject' | 'body' | 'action' | 'text' | 'html';
export type CommonPart = 'greeting' | 'linkLine' | 'closing';
export const COMMON_PARTS: readonly CommonPart[] = ['greeting', 'linkLine', 'closing'];

/** What an argument is: what a text may do with it (a plural on a number, a select on fixed values). */
type ArgumentKind = 'text' | 'number' | 'date' | readonly string[];
const YES_NO = ['yes', 'no'] as const;

/**
 * A mail's own arguments, in order, with their kinds: `url` for a link; its variables; for a
 * lifetime, the validity: `validity` written out for the language ("30 minutes", "1 Stunde",
 * "7 jours"), or `ttlAmount` with `ttlUnit` (`minute`, `hour` or `day`) to write it otherwise, and
 * `expiresAt` (a date).
 */
function ownArguments(spec: MailSpec): [string, ArgumentKind][] {
  return [
    ...(spec.link === true ? [['url', 'text'] as [string, ArgumentKind]] : []),
    ...Object.entries(spec.variables ?? {}).flatMap(([name, kind]): [string, ArgumentKind][] =>
      kind === 'optional'
        ? [
            [name, 'text'],
            [presence(name), YES_NO],
          ]
        : [[name, kind]],
    ),
    ...(spec.lifetime === true
      ? ([
          ['validity', 'text'],
          ['ttlAmount', 'number'],
          ['ttlUnit', ['minute', 'hour', 'day']],
          ['expiresAt', 'date'],
        ] as [string, ArgumentKind][])
      : []),
  ];
}

/** Every argument a text of `mail` may use, with its kind (for the common lines, `part` says which). */
function argumentKinds(mail: MailDefinition | 'common', part?: string): Map<string, ArgumentKind> {
  const kinds = new Map<string, ArgumentKind>([
    ['name', 'text'],
    ['hasName', YES_NO],
    ['email', 'text'],
    ['at', 'date'],
  ]);
  if (mail !== 'common') for (const [name, kind] of ownArguments(mail)) kinds.set(name, kind);
  else if (part === 'linkLine') kinds.set('action', 'text').set('url', 'text');
  return kinds;
}

/** Every argument a text of `mail` may use (for the common lines, `part` says which). */
export function argumentsOf(mail: MailDefinition | 'common', part?: string): string[] {
  return [...argumentKinds(mail, part).keys()];
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
 * What an argument of `mail` is used as, where that does not fit what it is: a select on a number,
 * a plural on a string, a select branch no value ever takes. Each problem as a sentence; none: [].
 */
export function misusedArguments(
  elements: readonly MessageFormatElement[],
  mail: MailDefinition | 'common',
  part?: string,
): string[] {
  const kinds = argumentKinds(mail, part);
  const problems: string[] = [];
  const walk = (list: readonly MessageFormatElement[]) => {
    for (const element of list) {
      const kind = 'value' in element ? kinds.get(String(element.value)) : undefined;
      if (element.type === TYPE.plural && kind !== 'number')
        problems.push(`{${element.value}} is not a number: it cannot be a plural`);
      if ((element.type === TYPE.date || element.type === TYPE.time) && kind !== 'date')
        problems.push(`{${element.value}} is not a date`);
      if (element.type === TYPE.number && kind !== 'number')
        problems.push(`{${element.value}} is not a number`);
      if (element.type === TYPE.select) {
        if (!Array.isArray(kind)) problems.push(`{${element.value}} has no fixed values to select on`);
        else
          for (const key of Object.keys(element.options))
            if (key !== 'other' && !kind.includes(key))
              problems.push(`{${element.value}} is never "${key}" (it is one of ${kind.join(', ')})`);
      }
      if (element.type === TYPE.select || element.type === TYPE.plural)
        for (const option of Object.values(element.options)) walk(option.value);
      if (element.type === TYPE.tag) walk(element.children);
    }
  };
  walk(elements);
  return problems;
}

/** Values of every argument of `mail`, of the right kinds: what a text is tried with before it is accepted. */
export function sampleArguments(
  mail: MailDefinition | 'common',
  part?: string,
): Record<string, string | number | Date> {
  const values: Record<string, string | number | Date> = {};
  for (const [name, kind] of argumentKinds(mail, part))
    values[name] =
      kind === 'number'
        ? 2
        : kind === 'date'
          ? new Date(0)
          : Array.isArray(kind)
            ? kind[0]!
            : `sample ${name}`;
  return values;
}
