// An operator's own mail texts (MAIL_TEMPLATES_DIR), read and checked once at start: a file that
// does not parse, names a message Usher does not send, or uses an argument its message does not
// have stops the start with one line naming it (settings.ts turns TemplateError into a ConfigError).
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
  isMessageId,
  MESSAGE_IDS,
  MESSAGE_SPECS,
  type MessageId,
  type MessagePart,
  misusedArguments,
  PARSE_OPTIONS,
  parseText,
  sampleArguments,
  usedArguments,
} from './catalog.ts';

/** An operator's texts for one message in one language (ICU MessageFormat, checked). */
export type OperatorMessage = Partial<Record<MessagePart, string>>;

/** An operator's texts in one language. */
export interface OperatorLocale {
  common: Partial<Record<CommonPart, string>>;
  messages: Partial<Record<MessageId, OperatorMessage>>;
}

/** What MAIL_TEMPLATES_DIR holds, checked: plain data (config.ts keeps it), by canonical locale. */
export interface OperatorTemplates {
  /** The folder they were read from; undefined when MAIL_TEMPLATES_DIR is unset. */
  dir: string | undefined;
  locales: Record<string, OperatorLocale>;
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
const JSON_PARTS = (message: MessageId): MessagePart[] =>
  MESSAGE_SPECS[message].link ? ['subject', 'body', 'action'] : ['subject', 'body'];
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

/**
 * Checks one ICU text of `message` (its `part`): it parses, uses only the message's arguments,
 * each as what it is, and formats with values of the right kinds. Throws TemplateError.
 */
function checkText(file: string, part: string, text: string, message: MessageId | 'common', locale: string) {
  if (text.trim() === '') throw new TemplateError(file, `${part}: must not be empty`);
  let elements: ReturnType<typeof parseText>;
  try {
    elements = parseText(text);
  } catch (error) {
    throw new TemplateError(file, `${part}: does not parse as ICU MessageFormat: ${parseProblem(error)}`);
  }
  const allowed = argumentsOf(message, part);
  for (const name of usedArguments(elements))
    if (!allowed.includes(name))
      throw new TemplateError(
        file,
        `${part}: uses {${name}}, an argument the ${message} message does not have (it has ${allowed.map((a) => `{${a}}`).join(', ')})`,
      );
  const [misuse] = misusedArguments(elements);
  if (misuse !== undefined) throw new TemplateError(file, `${part}: ${misuse}`);
  try {
    new IntlMessageFormat(elements, locale, undefined, PARSE_OPTIONS).format(sampleArguments(message, part));
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

function readJson(path: string, file: string, allowed: readonly string[]): Record<string, string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readText(path, file));
  } catch (error) {
    if (error instanceof TemplateError) throw error;
    throw new TemplateError(file, `is not JSON: ${(error as Error).message}`);
  }
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
 * Reads and checks every file in `dir`. Throws TemplateError naming the first bad file (or the
 * folder, when it cannot be read).
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
    if (message !== 'common' && !isMessageId(message))
      throw new TemplateError(
        file,
        `names no message Usher sends: "${message}" is not one of common, ${MESSAGE_IDS.join(', ')}`,
      );
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
      const json = readJson(file, file, COMMON_PARTS);
      for (const [part, text] of Object.entries(json)) checkText(file, part, text, 'common', locale);
      Object.assign(texts.common, json);
      continue;
    }
    const id = message as MessageId;
    const own = texts.messages[id] ?? {};
    texts.messages[id] = own;
    if (kind === 'json') {
      const json = readJson(file, file, JSON_PARTS(id));
      for (const [part, text] of Object.entries(json)) checkText(file, part, text, id, locale);
      Object.assign(own, json);
    } else {
      const text = readText(file, file);
      const part = kind === 'txt' ? 'text' : 'html';
      checkText(file, part, text, id, locale);
      own[part] = text;
    }
  }
  for (const [locale, texts] of Object.entries(locales)) {
    for (const [id, own] of Object.entries(texts.messages) as [MessageId, OperatorMessage][]) {
      const file = (kind: string) => join(dir, `${id}.${locale}.${kind}`);
      if (own.html !== undefined && own.text === undefined)
        throw new TemplateError(
          seen.get(`${id}.${locale}.html`) ?? file('html'),
          `needs ${id}.${locale}.txt beside it: every message has a plain-text part too`,
        );
      if (isBuiltIn(locale)) continue;
      // A language Usher has no texts of: each of its messages must be whole.
      const missing = [
        ...(own.subject === undefined ? ['subject'] : []),
        ...(own.text === undefined
          ? [
              ...(own.body === undefined ? ['body'] : []),
              ...(MESSAGE_SPECS[id].link && own.action === undefined ? ['action'] : []),
              ...(texts.common.greeting === undefined ? ['greeting (in common)'] : []),
              ...(MESSAGE_SPECS[id].link && texts.common.linkLine === undefined
                ? ['linkLine (in common)']
                : []),
              ...(texts.common.closing === undefined ? ['closing (in common)'] : []),
            ]
          : []),
      ];
      if (missing.length > 0)
        throw new TemplateError(
          seen.get(`${id}.${locale}.json`) ?? seen.get(`${id}.${locale}.txt`) ?? file('json'),
          `Usher has no ${locale} texts to complete this message: it needs ${missing.join(', ')} too (or a whole ${id}.${locale}.txt, and the subject)`,
        );
    }
  }
  return { dir, locales };
}
