// `npm run layers` (and the start of `npm test`): the layer check over the runtime imports of src/.
//
//   node scripts/layers.ts [SRC] [--baseline FILE] [--write-baseline]
//
// Rules, over the top-level folders of src/ and the files directly in src/ (the root; each file its
// own node, since app.ts and config.ts sit at opposite ends of the graph):
// 1. no runtime import cycle between folders;
// 2. kernel/ imports only kernel/, db/ and shared/; db/, shared/ and plugins/ import no feature
//    (a feature is any other folder but cli/, which is an entry like the root);
// 3. a feature imports another feature only through its public files: index.ts and feature.ts.
// Today's tree breaks them, so the check is a ratchet: scripts/layers-baseline.json lists the
// violations that exist, and the check fails on any that is not listed and on any listed that is
// gone, so the list only shrinks.
//
// Runtime means what Node runs: each file goes through Node's own type stripping first, so
// `import type`, `export type` and `typeof import('x')` in a type are gone, while
// `import { type X } from` stays, as `import {} from`, which loads the module (verbatimModuleSyntax).
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const DEFAULT_ROOT = fileURLToPath(new URL('../src/', import.meta.url));
const DEFAULT_BASELINE = fileURLToPath(new URL('./layers-baseline.json', import.meta.url));
const REGENERATE = 'node scripts/layers.ts --write-baseline';

const LOWER = new Set(['db/', 'shared/', 'plugins/']);
const KERNEL = 'kernel/';
const KERNEL_MAY_IMPORT = new Set([KERNEL, 'db/', 'shared/']);
const CLI = 'cli/';
const PUBLIC_FILES = new Set(['index.ts', 'feature.ts']);

/** One runtime import between two files of the tree, paths relative to the tree's root, with `/`. */
export interface Import {
  from: string;
  to: string;
  line: number;
}

export interface Violation {
  /** What the baseline lists: stable across edits that do not change the arrow. */
  key: string;
  message: string;
}

export interface Report {
  violations: Violation[];
  /** Baseline entries that no longer occur. */
  stale: string[];
  /** Violations not in the baseline. */
  added: Violation[];
  /** Runtime arrows between nodes (folders and root files), and those between two folders. */
  arrows: number;
  folderArrows: number;
  /** Folders and root files, sorted. */
  nodes: string[];
  cycles: string[][];
}

const isTypeScript = (name: string) => /\.[cm]?ts$/.test(name) && !name.endsWith('.d.ts');

/** Every TypeScript file under root, relative, sorted (browser scripts under assets are not modules of the service). */
function listFiles(root: string, dir = root): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...listFiles(root, path));
    else if (entry.isFile() && isTypeScript(entry.name))
      files.push(relative(root, path).split(sep).join('/'));
  }
  return files.sort();
}

/**
 * Node's type stripping, without the ExperimentalWarning it emits on first use: the check's
 * output is read in every `npm test`.
 */
export function strip(source: string): string {
  const emit = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const type = typeof rest[0] === 'string' ? rest[0] : (rest[0] as { type?: string } | undefined)?.type;
    if (type === 'ExperimentalWarning' && String(warning).includes('stripTypeScriptTypes')) return;
    (emit as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    return stripTypeScriptTypes(source);
  } finally {
    process.emitWarning = emit;
  }
}

interface Token {
  kind: 'name' | 'string' | 'template' | 'punct' | 'number' | 'regex';
  text: string;
  /** A string's value, or a template's when it has no substitution. */
  value?: string;
  /** A template's text up to its first substitution, or from the `}` ending one up to the next or its end. */
  part?: string;
  line: number;
}

const REGEX_AFTER_WORDS = new Set([
  'return',
  'typeof',
  'instanceof',
  'in',
  'of',
  'new',
  'delete',
  'void',
  'throw',
  'case',
  'do',
  'else',
  'yield',
  'await',
]);

/**
 * The tokens of JavaScript, as much as finding imports needs: comments, strings, templates and
 * regular expressions are skipped whole so that nothing inside them looks like an import.
 */
export function tokenize(code: string): Token[] {
  const tokens: Token[] = [];
  // One entry per open `${`: the braces opened inside it and not yet closed.
  const templates: number[] = [];
  let i = 0;
  let line = 1;
  if (code.startsWith('#!')) i = code.indexOf('\n') === -1 ? code.length : code.indexOf('\n');
  const countLines = (from: number, to: number) => {
    for (let k = from; k < to; k++) if (code.charCodeAt(k) === 10) line++;
  };
  const regexAllowed = () => {
    const last = tokens.at(-1);
    if (!last) return true;
    if (last.kind === 'name') return REGEX_AFTER_WORDS.has(last.text);
    if (last.kind === 'punct')
      return !(last.text === ')' || last.text === ']' || last.text === '++' || last.text === '--');
    return false;
  };
  // From just after a backtick or a `}` closing a substitution: the text up to the next `${` or backtick.
  const templatePart = (start: number): { end: number; closed: boolean; text: string } => {
    let k = start;
    let text = '';
    while (k < code.length) {
      const c = code[k];
      if (c === '\\') {
        text += code.slice(k, k + 2);
        k += 2;
      } else if (c === '`') return { end: k + 1, closed: true, text };
      else if (c === '$' && code[k + 1] === '{') return { end: k + 2, closed: false, text };
      else {
        text += c;
        k++;
      }
    }
    throw new Error(`unterminated template literal at line ${line}`);
  };
  while (i < code.length) {
    const c = code[i] as string;
    const start = i;
    if (/\s/.test(c)) {
      if (c === '\n') line++;
      i++;
    } else if (c === '/' && code[i + 1] === '/') {
      while (i < code.length && code[i] !== '\n') i++;
    } else if (c === '/' && code[i + 1] === '*') {
      const end = code.indexOf('*/', i + 2);
      i = end === -1 ? code.length : end + 2;
      countLines(start, i);
    } else if (c === '"' || c === "'") {
      let k = i + 1;
      while (k < code.length && code[k] !== c) {
        if (code[k] === '\n') throw new Error(`unterminated string at line ${line}`);
        k += code[k] === '\\' ? 2 : 1;
      }
      tokens.push({ kind: 'string', text: code.slice(i, k + 1), value: code.slice(i + 1, k), line });
      i = k + 1;
    } else if (c === '`') {
      const part = templatePart(i + 1);
      tokens.push({
        kind: 'template',
        text: '`',
        value: part.closed ? part.text : undefined,
        part: part.text,
        line,
      });
      countLines(start, part.end);
      i = part.end;
      if (!part.closed) templates.push(0);
    } else if (c === '}' && templates.length > 0 && templates.at(-1) === 0) {
      templates.pop();
      const part = templatePart(i + 1);
      countLines(start, part.end);
      i = part.end;
      if (!part.closed) templates.push(0);
      // The whole template reads as one value to what follows it.
      tokens.push({ kind: 'template', text: '`', part: part.text, line });
    } else if (c === '/' && regexAllowed()) {
      let k = i + 1;
      let inClass = false;
      while (k < code.length) {
        const d = code[k];
        if (d === '\n') throw new Error(`unterminated regular expression at line ${line}`);
        if (d === '\\') k++;
        else if (d === '[') inClass = true;
        else if (d === ']') inClass = false;
        else if (d === '/' && !inClass) break;
        k++;
      }
      k++;
      while (k < code.length && /[a-z]/i.test(code[k] as string)) k++;
      tokens.push({ kind: 'regex', text: code.slice(i, k), line });
      i = k;
    } else if (/[A-Za-z$_#\\]/.test(c) || c.charCodeAt(0) > 127) {
      // Beyond ASCII, every character is taken as part of a name: imports are all that matters here.
      let k = i + 1;
      while (k < code.length && (/[\w$\\]/.test(code[k] as string) || code.charCodeAt(k) > 127)) k++;
      tokens.push({ kind: 'name', text: code.slice(i, k), line });
      i = k;
    } else if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(code[i + 1] ?? ''))) {
      let k = i + 1;
      while (k < code.length && /[0-9a-z_.]/i.test(code[k] as string)) k++;
      tokens.push({ kind: 'number', text: code.slice(i, k), line });
      i = k;
    } else {
      const two = code.slice(i, i + 2);
      const text = two === '++' || two === '--' ? two : c;
      if (templates.length > 0) {
        if (c === '{') templates[templates.length - 1]! += 1;
        else if (c === '}') templates[templates.length - 1]! -= 1;
      }
      tokens.push({ kind: 'punct', text, line });
      i += text.length;
    }
  }
  return tokens;
}

/** A module specifier, or undefined when the import names its module in anything but a literal. */
export interface Specifier {
  specifier: string | undefined;
  line: number;
  dynamic: boolean;
}

/** The modules a piece of (type-stripped) JavaScript loads: static imports, re-exports, import(). */
export function specifiers(code: string): Specifier[] {
  const tokens = tokenize(code);
  const found: Specifier[] = [];
  const at = (k: number) => tokens[k];
  const isLiteral = (t: Token | undefined) =>
    t?.kind === 'string' || (t?.kind === 'template' && t.value !== undefined);
  // Scans an import or export clause (names, braces, commas, `*`, `as`) up to `from 'x'`.
  const fromClause = (k: number): Token | undefined => {
    for (; k < tokens.length; k++) {
      const t = tokens[k] as Token;
      if (t.kind === 'name' && t.text === 'from' && at(k + 1)?.kind === 'string') return at(k + 1);
      if (t.kind === 'string' && at(k - 1)?.text === 'as') continue; // `{ 'a-b' as c }`
      if (t.kind === 'name' || (t.kind === 'punct' && '{},*'.includes(t.text))) continue;
      if (t.kind === 'string' && at(k - 1)?.kind === 'punct' && '{,'.includes(at(k - 1)?.text ?? ''))
        continue;
      return undefined;
    }
    return undefined;
  };
  for (let k = 0; k < tokens.length; k++) {
    const t = tokens[k] as Token;
    if (t.kind !== 'name' || (t.text !== 'import' && t.text !== 'export')) continue;
    const before = at(k - 1);
    // `x.import`, `{ import: … }` and the like are names, not declarations.
    if (before?.kind === 'punct' && before.text === '.') continue;
    const next = at(k + 1);
    if (next?.kind === 'punct' && next.text === ':') continue;
    if (t.text === 'import') {
      if (next?.kind === 'punct' && next.text === '.') continue; // import.meta
      if (next?.kind === 'punct' && next.text === '(') {
        const argument = at(k + 2);
        const after = at(k + 3);
        const literal =
          isLiteral(argument) && after?.kind === 'punct' && (after.text === ')' || after.text === ',');
        found.push({ specifier: literal ? argument?.value : undefined, line: t.line, dynamic: true });
        continue;
      }
      if (next?.kind === 'string') {
        found.push({ specifier: next.value, line: t.line, dynamic: false });
        continue;
      }
      const source = fromClause(k + 1);
      if (source) found.push({ specifier: source.value, line: t.line, dynamic: false });
    } else if (next?.kind === 'punct' && (next.text === '*' || next.text === '{')) {
      const source = fromClause(k + 1);
      if (source) found.push({ specifier: source.value, line: t.line, dynamic: false });
    }
  }
  return found;
}

/** The node a file belongs to: its top-level folder (`users/`), or itself when directly in the root (`app.ts`). */
export function nodeOf(file: string): string {
  const slash = file.indexOf('/');
  return slash === -1 ? file : file.slice(0, slash + 1);
}

const isRootFile = (node: string) => !node.endsWith('/');
/** The root's files and cli/ are entries: they may import anything. */
const isEntry = (node: string) => isRootFile(node) || node === CLI;
const isFeature = (node: string) => !isEntry(node) && !LOWER.has(node) && node !== KERNEL;

/** Every runtime import between files of the tree, and the imports it cannot resolve. */
export function readImports(root: string): { imports: Import[]; unresolved: Violation[]; files: string[] } {
  const files = listFiles(root);
  const imports: Import[] = [];
  const unresolved: Violation[] = [];
  const shown = (file: string) => `${basename(root)}/${file}`;
  for (const file of files) {
    const source = readFileSync(join(root, file), 'utf8');
    let code: string;
    let found: Specifier[];
    try {
      code = strip(source);
      found = specifiers(code);
    } catch (error) {
      throw new Error(`${shown(file)}: ${(error as Error).message}`);
    }
    for (const { specifier, line } of found) {
      if (specifier === undefined) {
        unresolved.push({
          key: `computed: ${shown(file)}`,
          message: `${shown(file)}:${line}: import() of a computed name; the check can only follow a string literal`,
        });
        continue;
      }
      if (!specifier.startsWith('./') && !specifier.startsWith('../')) continue; // a package or node:
      const target = relative(root, resolve(root, dirname(file), specifier.replace(/[?#].*$/, '')));
      if (target.startsWith('..') || target === '') continue; // outside the tree
      imports.push({ from: file, to: target.split(sep).join('/'), line });
    }
  }
  return { imports, unresolved, files };
}

/** Tarjan's strongly connected components, each sorted, in a stable order. */
function components(nodes: string[], edges: Map<string, Set<string>>): string[][] {
  let index = 0;
  const indices = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const result: string[][] = [];
  const visit = (v: string) => {
    indices.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const w of [...(edges.get(v) ?? [])].sort()) {
      if (!indices.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, indices.get(w)!));
    }
    if (low.get(v) === indices.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      result.push(component.sort());
    }
  };
  for (const v of [...nodes].sort()) if (!indices.has(v)) visit(v);
  return result.sort((a, b) => (a[0]! < b[0]! ? -1 : 1));
}

/** The shortest way from one node to another inside a set of nodes (breadth first). */
function path(from: string, to: string, edges: Map<string, Set<string>>, within: Set<string>): string[] {
  const previous = new Map<string, string>([[from, from]]);
  const queue = [from];
  while (queue.length > 0) {
    const v = queue.shift()!;
    if (v === to) break;
    for (const w of [...(edges.get(v) ?? [])].sort()) {
      if (within.has(w) && !previous.has(w)) {
        previous.set(w, v);
        queue.push(w);
      }
    }
  }
  const way = [to];
  while (way[0] !== from) way.unshift(previous.get(way[0]!)!);
  return way;
}

/** Applies the rules to the tree under root and compares the violations with the baseline. */
export function checkLayers(root: string, baseline: readonly string[]): Report {
  const { imports, unresolved, files } = readImports(root);
  const shown = (file: string) => `${basename(root)}/${file}`;
  const violations: Violation[] = [...unresolved];

  // The folder graph, with the first file-level import seen for each arrow.
  const edges = new Map<string, Set<string>>();
  const example = new Map<string, Import>();
  const nodes = new Set(files.map(nodeOf));
  for (const i of imports) {
    const a = nodeOf(i.from);
    const b = nodeOf(i.to);
    nodes.add(b);
    if (a === b) continue;
    if (!edges.has(a)) edges.set(a, new Set());
    edges.get(a)!.add(b);
    if (!example.has(`${a}\0${b}`)) example.set(`${a}\0${b}`, i);
  }
  const arrow = (a: string, b: string) => {
    const i = example.get(`${a}\0${b}`)!;
    return `    ${a} -> ${b}: ${shown(i.from)}:${i.line} imports ${shown(i.to)}`;
  };
  const cycles = components([...nodes], edges).filter((c) => c.length > 1);
  for (const cycle of cycles) {
    const within = new Set(cycle);
    for (const a of cycle) {
      for (const b of [...(edges.get(a) ?? [])].sort()) {
        if (!within.has(b)) continue;
        const way = [a, ...path(b, a, edges, within)];
        const arrows = way.slice(1).map((b2, n) => arrow(way[n]!, b2));
        violations.push({
          key: `cycle: ${a} -> ${b}`,
          message: [
            `cycle between folders: ${way.join(' -> ')} (the arrow ${a} -> ${b} closes it)`,
            ...arrows,
          ].join('\n'),
        });
      }
    }
  }

  for (const i of imports) {
    const a = nodeOf(i.from);
    const b = nodeOf(i.to);
    if (a === b) continue;
    const where = `${shown(i.from)}:${i.line} imports ${shown(i.to)}`;
    const key = `${shown(i.from)} -> ${shown(i.to)}`;
    if (a === KERNEL && !KERNEL_MAY_IMPORT.has(b)) {
      violations.push({
        key: `layer: ${key}`,
        message: `kernel/ imports only kernel/, db/ and shared/: ${where}`,
      });
    } else if (LOWER.has(a) && (isFeature(b) || b === CLI)) {
      violations.push({ key: `layer: ${key}`, message: `${a} imports no feature: ${where}` });
    } else if (isFeature(a) && isFeature(b) && !PUBLIC_FILES.has(i.to.slice(b.length))) {
      violations.push({
        key: `private: ${key}`,
        message: `a feature imports another only through its index.ts or feature.ts: ${where}, private to ${b}`,
      });
    }
  }

  // One entry per key: two imports of one file from one file are one arrow.
  const byKey = new Map<string, Violation>();
  for (const v of violations) if (!byKey.has(v.key)) byKey.set(v.key, v);
  const unique = [...byKey.values()].sort((a, b) => (a.key < b.key ? -1 : 1));
  const listed = new Set(baseline);
  return {
    violations: unique,
    added: unique.filter((v) => !listed.has(v.key)),
    stale: [...listed].filter((key) => !byKey.has(key)).sort(),
    arrows: [...edges.values()].reduce((sum, targets) => sum + targets.size, 0),
    folderArrows: [...edges].reduce(
      (sum, [a, targets]) => (isRootFile(a) ? sum : sum + [...targets].filter((b) => !isRootFile(b)).length),
      0,
    ),
    nodes: [...nodes].sort(),
    cycles,
  };
}

/** The baseline as Biome formats it, so that writing it leaves `npm run lint` content. */
export function formatBaseline(keys: readonly string[]): string {
  const sorted = [...new Set(keys)].sort();
  const oneLine = `[${sorted.map((k) => JSON.stringify(k)).join(', ')}]`;
  if (oneLine.length <= 110) return `${oneLine}\n`;
  return `[\n${sorted.map((k) => `  ${JSON.stringify(k)}`).join(',\n')}\n]\n`;
}

function readBaseline(file: string): string[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const keys: unknown = JSON.parse(text);
  if (!Array.isArray(keys) || !keys.every((k) => typeof k === 'string')) {
    throw new Error(`${file}: expected a JSON array of strings`);
  }
  return keys;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

type Print = (line: string) => void;
const print =
  (stream: NodeJS.WriteStream): Print =>
  (line) => {
    stream.write(`${line}\n`);
  };

/** The command line; returns the exit code. Output goes through log and error, so tests can read it. */
export function main(
  argv: readonly string[],
  log = print(process.stdout),
  error = print(process.stderr),
): number {
  let root = DEFAULT_ROOT;
  let baselineFile = DEFAULT_BASELINE;
  let write = false;
  for (let k = 0; k < argv.length; k++) {
    const arg = argv[k]!;
    if (arg === '--write-baseline') write = true;
    else if (arg === '--baseline') baselineFile = resolve(argv[++k] ?? '');
    else if (!arg.startsWith('-')) root = resolve(arg);
    else {
      error(
        `unknown option ${arg}; usage: node scripts/layers.ts [SRC] [--baseline FILE] [--write-baseline]`,
      );
      return 2;
    }
  }
  const baseline = readBaseline(baselineFile);
  const report = checkLayers(root, baseline);
  const files = report.nodes.filter(isRootFile).length;
  const summary = [
    `layers: ${report.arrows} runtime arrows between ${report.nodes.length - files} folders and ${files} root files of ${basename(root)}/`,
    ` (${report.folderArrows} between two folders), `,
    plural(report.cycles.length, 'cycle'),
    report.cycles.map((c) => ` (${c.length} folders: ${c.join(' ')})`).join(''),
    `, ${plural(report.violations.length, 'violation')}`,
  ].join('');
  if (write) {
    writeFileSync(baselineFile, formatBaseline(report.violations.map((v) => v.key)));
    log(`${summary}; wrote them to ${relative(process.cwd(), baselineFile)}`);
    return 0;
  }
  const baselined = report.violations.length - report.added.length;
  log(`${summary}, ${baselined} of them in the baseline`);
  if (report.added.length === 0 && report.stale.length === 0) return 0;
  for (const v of report.added) error(`layers: ${v.message}`);
  if (report.added.length > 0) {
    error(
      `layers: ${report.added.length} new ${report.added.length === 1 ? 'violation' : 'violations'}; the baseline only shrinks: remove the import rather than list it (docs/development.md, "The layer check")`,
    );
  }
  if (report.stale.length > 0) {
    error(
      `layers: ${report.stale.length} baseline ${report.stale.length === 1 ? 'entry no longer occurs' : 'entries no longer occur'}:`,
    );
    for (const key of report.stale) error(`    ${key}`);
    error(
      `layers: take ${report.stale.length === 1 ? 'it' : 'them'} out of ${relative(process.cwd(), baselineFile)}: ${REGENERATE}`,
    );
  }
  return 1;
}

if (import.meta.main) process.exitCode = main(process.argv.slice(2));
