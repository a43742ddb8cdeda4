// An operator's own mail texts (MAIL_TEMPLATES_DIR), read and checked once at start: a file that
// does not parse, names a message Usher does not send, or uses an argument its message does not
// have stops the start with one line naming it (settings.ts turns TemplateError into a ConfigError).
// The checks come in two steps, because the mail feature learns which mails exist only from the
// features that declare them (decision 381): `loadOperatorTemplates` (mail/settings.ts, at start)
// reads the folder and checks all that needs no mail's declaration (names, languages, JSON, ICU
// syntax, the common texts); `checkOperatorTemplates` (MailTemplates, given the mails) checks the rest.
//
// The folder holds files named <message>.<locale>.<kind>, nothing else:
// - <message>.<locale>.json: any of the message's texts, `subject`, `body` and (for a message with
//   a link) `action`, each ICU MessageFormat; Usher's own for the others;
// - common.<locale>.json: `greeting`, `linkLine` (how the text part writes out a link: `{action}`
//   and `{url}`) and `closing`, shared by every message in that language;
// - <message>.<locale>.txt: the whole plain-text part, and <message>.<locale>.html the whole HTML
//   part (needs the .txt beside it: every message has both). Arguments put into an HTML template
//   are HTML-escaped.
// A locale Usher ships (en, de, fr, es) may be changed a text at a time. Another locale adds a
// language: its messages must be whole (a subject, and the body, greeting and closing or a .txt);
// a message it does not have is written in the best match among the others.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { IntlMessageFormat } from 'intl-messageformat';
import { BUILT_IN_LOCALES, canonicalLocale } from '../shared/locale.ts';
import {
  argumentsOf,
  COMMON_PARTS,
  type CommonPart,
  type MailDefinition,
  type MessagePart,
  misusedArguments,
  PARSE_OPTIONS,
  parseText,
  sampleArguments,
  usedArguments,
} from './catalog.ts';

/** An operator's texts for one message in one language (ICU MessageFormat, checked). */
export type OperatorMessage = Partial<Record<MessagePart, string>>;

/** One file of a message, as read: a .json's parsed value, a .txt's or .html's text. */
export interface OperatorFile<T> {
  /** Its path, to name in an error. */
  file: string;
  content: T;
}

/** A message's files in one language, as read: checked against the mail's declaration later. */
export interface OperatorFiles {
  json?: OperatorFile<unknown>;
  txt?: OperatorFile<string>;
  html?: OperatorFile<string>;
}

/** An operator's texts in one language, as read. */
export interface OperatorLocale {
  /** Checked: the common lines are the mail feature's own. */
  common: Partial<Record<CommonPart, string>>;
  /** By message, its files: checkOperatorTemplates checks them once the mails are known. */
  messages: Record<string, OperatorFiles>;
}

/** What MAIL_TEMPLATES_DIR holds: plain data (config.ts keeps it), by canonical locale. */
export interface OperatorTemplates {
  /** The folder they were read from; undefined when MAIL_TEMPLATES_DIR is unset. */
  dir: string | undefined;
  locales: Record<string, OperatorLocale>;
}

/** An operator's texts in one language, checked against the mails (checkOperatorTemplates). */
export interface CheckedLocale {
  common: Partial<Record<CommonPart, string>>;
  messages: Record<string, OperatorMessage>;
}

export const NO_OPERATOR_TEMPLATES: OperatorTemplates = { dir: undefined, locales: {} };

/** What is wrong with one file of the folder (`file` its path), or with the folder itself. */
export class TemplateError extends Error {
  readonly file: string;
  constructor(file: string, detail: string) {
    super(`${file}: ${detail}`);
    this.file = file;
    this.name = 'TemplateError';
  }
}

/** A template larger than this is refused: a mail's text is a few kilobytes. */
export const TEMPLATE_MAX_BYTES = 64 * 1024;

const NAME = /^([A-Za-z]+)\.([A-Za-z0-9-]+)\.(json|txt|html)$/;
/** The texts a message's .json may hold; which of them a given message has, its declaration says. */
const MESSAGE_JSON_PARTS = ['subject', 'body', 'action'] as const;
const JSON_PARTS = (mail: MailDefinition): MessagePart[] =>
  mail.link ? ['subject', 'body', 'action'] : ['subject', 'body'];
const isBuiltIn = (locale: string) => (BUILT_IN_LOCALES as readonly string[]).includes(locale);

/** "EXPECT_ARGUMENT_CLOSING_BRACE" at 1:9 as "expect argument closing brace at line 1, column 9". */
function parseProblem(error: unknown): string {
  const { message, location } = error as {
    message?: string;
    location?: { start: { line: number; column: number } };
  };
  const what = (message ?? String(error)).toLowerCase().replaceAll('_', ' ');
  return location ? `${what} at line ${location.start.line}, column ${location.start.column}` : what;
}

/** Checks that one ICU text (its `part`) is there and parses. Throws TemplateError. */
function checkSyntax(file: string, part: string, text: string): ReturnType<typeof parseText> {
  if (text.trim() === '') throw new TemplateError(file, `${part}: must not be empty`);
  try {
    return parseText(text);
  } catch (error) {
    throw new TemplateError(file, `${part}: does not parse as ICU MessageFormat: ${parseProblem(error)}`);
  }
}

/**
 * Checks one ICU text of `mail` (its `part`): it parses, uses only the message's arguments, each
 * as what it is, and formats with values of the right kinds. Throws TemplateError.
 */
function checkText(
  file: string,
  part: string,
  text: string,
  mail: MailDefinition | 'common',
  locale: string,
) {
  const elements = checkSyntax(file, part, text);
  const message = mail === 'common' ? mail : mail.kind;
  const allowed = argumentsOf(mail, part);
  for (const name of usedArguments(elements))
    if (!allowed.includes(name))
      throw new TemplateError(
        file,
        `${part}: uses {${name}}, an argument the ${message} message does not have (it has ${allowed.map((a) => `{${a}}`).join(', ')})`,
      );
  const [misuse] = misusedArguments(elements, mail, part);
  if (misuse !== undefined) throw new TemplateError(file, `${part}: ${misuse}`);
  try {
    new IntlMessageFormat(elements, locale, undefined, PARSE_OPTIONS).format(sampleArguments(mail, part));
  } catch (error) {
    throw new TemplateError(file, `${part}: cannot be formatted: ${(error as Error).message}`);
  }
}

function readText(path: string, file: string): string {
  if (statSync(path).size > TEMPLATE_MAX_BYTES)
    throw new TemplateError(file, `is larger than ${TEMPLATE_MAX_BYTES / 1024} KiB`);
  const bytes = readFileSync(path);
  const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes);
  if (text.includes('\uFFFD')) throw new TemplateError(file, 'is not UTF-8 text');
  return text.replace(/^\uFEFF/, '');
}

function readJson(path: string, file: string): unknown {
  try {
    return JSON.parse(readText(path, file));
  } catch (error) {
    if (error instanceof TemplateError) throw error;
    throw new TemplateError(file, `is not JSON: ${(error as Error).message}`);
  }
}

/** A JSON object of texts, each one of `allowed`. Throws TemplateError. */
function jsonTexts(file: string, parsed: unknown, allowed: readonly string[]): Record<string, string> {
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new TemplateError(file, `must be a JSON object with any of ${allowed.join(', ')}`);
  const texts: Record<string, string> = {};
  for (const [key, value] of Object.entries(parsed)) {
    if (!allowed.includes(key))
      throw new TemplateError(file, `"${key}" is not a text of this message (it has ${allowed.join(', ')})`);
    if (typeof value !== 'string') throw new TemplateError(file, `"${key}" must be a string`);
    texts[key] = value;
  }
  return texts;
}

/**
 * Reads every file in `dir` and checks all that needs no mail's declaration. Throws TemplateError
 * naming the first bad file (or the folder, when it cannot be read).
 */
export function loadOperatorTemplates(dir: string): OperatorTemplates {
  let entries: string[];
  try {
    if (!statSync(dir).isDirectory()) throw new Error('not a folder');
    entries = readdirSync(dir).sort();
  } catch {
    throw new TemplateError(dir, 'is not a folder Usher can read');
  }
  const locales: Record<string, OperatorLocale> = {};
  /** The file each (message, locale, kind) came from: the same one twice in other letter case is refused. */
  const seen = new Map<string, string>();
  for (const entry of entries) {
    // Hidden files (.gitkeep, an editor's swap file) are not templates.
    if (entry.startsWith('.')) continue;
    const file = join(dir, entry);
    if (!statSync(file).isFile())
      throw new TemplateError(file, 'is not a file: templates lie directly in MAIL_TEMPLATES_DIR');
    const named = NAME.exec(entry);
    if (!named)
      throw new TemplateError(
        file,
        'is not named <message>.<locale>.json, .txt or .html (like passwordReset.de.json)',
      );
    const [, message, rawLocale, kind] = named as unknown as [
      string,
      string,
      string,
      'json' | 'txt' | 'html',
    ];
    const locale = canonicalLocale(rawLocale);
    if (locale === undefined) throw new TemplateError(file, `"${rawLocale}" is not a BCP 47 language tag`);
    const key = `${message}.${locale}.${kind}`;
    const earlier = seen.get(key);
    if (earlier !== undefined) throw new TemplateError(file, `is the same template as ${earlier}`);
    seen.set(key, file);
    const texts = locales[locale] ?? { common: {}, messages: {} };
    locales[locale] = texts;
    if (message === 'common') {
      if (kind !== 'json') throw new TemplateError(file, 'common texts go in common.<locale>.json');
      const json = jsonTexts(file, readJson(file, file), COMMON_PARTS);
      for (const [part, text] of Object.entries(json)) checkText(file, part, text, 'common', locale);
      Object.assign(texts.common, json);
      continue;
    }
    const own = texts.messages[message] ?? {};
    texts.messages[message] = own;
    if (kind === 'json') {
      const content = readJson(file, file);
      // What parses or not is known now; which texts the message has, once its mail is.
      if (typeof content === 'object' && content !== null && !Array.isArray(content))
        for (const [part, text] of Object.entries(content))
          if ((MESSAGE_JSON_PARTS as readonly string[]).includes(part) && typeof text === 'string')
            checkSyntax(file, part, text);
      own.json = { file, content };
    } else {
      const content = readText(file, file);
      checkSyntax(file, kind === 'txt' ? 'text' : 'html', content);
      own[kind] = { file, content };
    }
  }
  for (const [locale, texts] of Object.entries(locales))
    for (const [id, own] of Object.entries(texts.messages))
      if (own.html !== undefined && own.txt === undefined)
        throw new TemplateError(
          own.html.file,
          `needs ${id}.${locale}.txt beside it: every message has a plain-text part too`,
        );
  return { dir, locales };
}

/**
 * The operator's texts checked against the mails the features declared: each file names one of
 * them, holds only its texts, and uses only its arguments, each as what it is; a language Usher
 * does not ship has each of its messages whole. Throws TemplateError naming the first bad file
 * (in the folder's order).
 */
export function checkOperatorTemplates(
  templates: OperatorTemplates,
  mails: ReadonlyMap<string, MailDefinition>,
): Record<string, CheckedLocale> {
  const files: { file: string; locale: string; mail: string; kind: keyof OperatorFiles }[] = [];
  for (const [locale, texts] of Object.entries(templates.locales))
    for (const [mail, own] of Object.entries(texts.messages))
      for (const kind of ['json', 'txt', 'html'] as const) {
        const read = own[kind];
        if (read !== undefined) files.push({ file: read.file, locale, mail, kind });
      }
  files.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));

  const checked: Record<string, CheckedLocale> = {};
  for (const [locale, texts] of Object.entries(templates.locales))
    checked[locale] = { common: texts.common, messages: {} };
  for (const { file, locale, mail: message, kind } of files) {
    const mail = mails.get(message);
    if (mail === undefined)
      throw new TemplateError(
        file,
        `names no message Usher sends: "${message}" is not one of common, ${[...mails.keys()].join(', ')}`,
      );
    const read = templates.locales[locale]!.messages[message]![kind]!;
    const own = checked[locale]!.messages[message] ?? {};
    checked[locale]!.messages[message] = own;
    if (kind === 'json') {
      const json = jsonTexts(file, read.content, JSON_PARTS(mail));
      for (const [part, text] of Object.entries(json)) checkText(file, part, text, mail, locale);
      Object.assign(own, json);
    } else {
      const part = kind === 'txt' ? 'text' : 'html';
      checkText(file, part, read.content as string, mail, locale);
      own[part] = read.content as string;
    }
  }
  for (const [locale, texts] of Object.entries(checked)) {
    if (isBuiltIn(locale)) continue;
    for (const [id, own] of Object.entries(texts.messages)) {
      // A language Usher has no texts of: each of its messages must be whole.
      const link = mails.get(id)!.link;
      const missing = [
        ...(own.subject === undefined ? ['subject'] : []),
        ...(own.text === undefined
          ? [
              ...(own.body === undefined ? ['body'] : []),
              ...(link && own.action === undefined ? ['action'] : []),
              ...(texts.common.greeting === undefined ? ['greeting (in common)'] : []),
              ...(link && texts.common.linkLine === undefined ? ['linkLine (in common)'] : []),
              ...(texts.common.closing === undefined ? ['closing (in common)'] : []),
            ]
          : []),
      ];
      const read = templates.locales[locale]!.messages[id]!;
      if (missing.length > 0)
        throw new TemplateError(
          read.json?.file ?? read.txt?.file ?? join(templates.dir ?? '', `${id}.${locale}.json`),
          `Usher has no ${locale} texts to complete this message: it needs ${missing.join(', ')} too (or a whole ${id}.${locale}.txt, and the subject)`,
        );
    }
  }
  return checked;
}
