// Names, emails and import files are written by whoever registered or prepared them; printed raw,
// a control character in one can move the cursor, clear an admin's screen, retitle the window or
// fake lines of output, and a bidi override can make a line read differently from its bytes.

/**
 * C0 controls, DEL, C1 controls (a terminal may take U+009B as CSI), the line and paragraph
 * separators, and the bidi embeddings, overrides, isolates and marks.
 */
const UNSAFE = /[\p{Cc}\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu;
/** The same, plus the backslash, so that an escape shown can't be told from a name that spells one. */
const UNSAFE_OR_BACKSLASH = /[\\\p{Cc}\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu;

/** The escapes a reader knows best. */
const SHORT: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

const hex = (code: number, digits: number) => code.toString(16).padStart(digits, '0');

/**
 * Text safe to print on a terminal: every unsafe character shown as an escape (`\x1b`, `\u202e`,
 * `\n`, a backslash as `\\`). With `json`, `text` is the output of JSON.stringify, which escapes
 * C0 and backslashes already but lets DEL, C1 and the rest through: those get `\uXXXX`, still
 * valid JSON as they can only occur inside strings there.
 */
export function visible(text: string, json = false): string {
  return text.replace(json ? UNSAFE : UNSAFE_OR_BACKSLASH, (char) => {
    const code = char.charCodeAt(0);
    if (!json && SHORT[char] !== undefined) return SHORT[char];
    if (json || code > 0xff) return `\\u${hex(code, 4)}`;
    return `\\x${hex(code, 2)}`;
  });
}
