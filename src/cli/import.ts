// `users import FILE`: JSON lines or CSV. Every line is checked first (users/imports.ts: the
// registration rules, a plain password or another system's hash, emailVerified, createdAt); one
// bad line refuses the whole file, with the line number of each, before anything is written.
// Then the accounts go in batches of 500, each one transaction; plain passwords are hashed in
// parallel within the configured hash concurrency, hashes from other systems are kept as they
// are (re-hashed at each user's first sign-in). Emails that already have an account are skipped,
// so an interrupted import is finished by running it again. A line without a password (no
// "password" or "passwordHash", or null) imports an account without one.
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { extname } from 'node:path';
import { createInterface } from 'node:readline';
import { pipeline } from 'node:stream';
import { type Parser, parse } from 'csv-parse';
import {
  type CheckedImport,
  checkImportRow,
  IMPORT_FIELDS,
  type ImportField,
  type ImportRefusal,
  type ImportRow,
  prepareImports,
  refusalOf,
  rowOfObject,
} from '../users/imports.ts';
import type { UsersService } from '../users/service.ts';

export type Refusal = ImportRefusal;

export interface ImportReport {
  /** Data lines read (blank lines are not counted). */
  total: number;
  imported: number;
  skipped: number;
  /** Every refused line; when there is one, nothing was imported. */
  refused: Refusal[];
  seconds: number;
}

/** One data line of the file: a row to check, or a line refused before any rule is applied. */
type Entry = { row: ImportRow } | { refused: Refusal };

/** A file that cannot be read as a whole (broken CSV quoting): refused before anything is imported. */
export class ImportFileError extends Error {}

/**
 * The import failed part-way (the database went away, the file changed between the check and
 * the import): the batches before it are in, and a rerun skips them.
 */
export class ImportInterruptedError extends Error {}

const LINE_BREAKS = /\r\n|\r|\n/g;
const LEADING_BREAKS = /^(?:\r\n|\r|\n)*/;
const breaks = (text: string) => text.match(LINE_BREAKS)?.length ?? 0;
/** Only these columns must be there: a file without a password column imports accounts without passwords. */
const REQUIRED = ['email', 'name'] as const;
/** Far above any valid row; only bounds what one unclosed quote can make the parser hold. */
const MAX_CSV_RECORD = 1 << 20;

async function* jsonLines(path: string): AsyncGenerator<Entry> {
  const lines = createInterface({ input: createReadStream(path, 'utf8'), crlfDelay: Infinity });
  let line = 0;
  for await (const text of lines) {
    line += 1;
    // An editor's byte order mark would make the first object unreadable.
    const raw = line === 1 ? text.replace(/^\uFEFF/, '') : text;
    if (raw.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      value = undefined;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      yield { refused: { line, reason: 'not a JSON object' } };
      continue;
    }
    let entry: Entry;
    try {
      entry = { row: rowOfObject(line, value as Record<string, unknown>) };
    } catch (error) {
      entry = { refused: refusalOf(line, error) };
    }
    yield entry;
  }
}

const folded = (name: string) =>
  name
    .trim()
    .toLowerCase()
    .replace(/[\s_-]/g, '');
/** A header's column names, in any case and with `_` or `-` (password_hash), to the fields they are. */
const CSV_COLUMNS = new Map<string, ImportField>(IMPORT_FIELDS.map((field) => [folded(field), field]));

/**
 * A CSV record as a row. CSV has no null: an empty cell of an optional column is an absent field
 * (a row with neither password nor passwordHash imports an account without a password).
 * emailVerified is written true or false.
 */
function rowOfRecord(line: number, record: Record<string, string>): ImportRow {
  const cell = (field: ImportField) => {
    const value = record[field];
    return value === '' ? undefined : value;
  };
  const verified = cell('emailVerified')?.trim().toLowerCase();
  return {
    line,
    email: record.email,
    name: record.name,
    password: cell('password'),
    passwordHash: cell('passwordHash'),
    emailVerified: verified === 'true' ? true : verified === 'false' ? false : cell('emailVerified'),
    createdAt: cell('createdAt'),
  };
}

/**
 * RFC 4180 records by csv-parse, streamed. Line numbers are counted here from each record's raw
 * text, in file order: csv-parse's own `info.lines` counts a CRLF inside a quoted field as two
 * lines, so every line reported after one would be off. The raw text of a record starts with the
 * blank lines skipped before it and keeps one character of each line break, so counting breaks in
 * it gives the physical lines both for LF and CRLF files.
 */
async function* csvRecords(path: string): AsyncGenerator<Entry> {
  let linesRead = 0;
  let columns: string[] = [];
  const refusals: Refusal[] = [];
  const startLine = (raw = '') => {
    const line = linesRead + breaks(LEADING_BREAKS.exec(raw)?.[0] ?? '') + 1;
    linesRead += breaks(raw);
    return line;
  };
  const parser: Parser = parse({
    bom: true,
    // The header names the columns in any order and case, as before.
    columns: (header: string[]) => {
      linesRead = parser.info.lines;
      // Known columns by their field's name; others keep theirs (and are ignored).
      columns = header.map((name) => CSV_COLUMNS.get(folded(name)) ?? name.trim().toLowerCase());
      for (const column of REQUIRED) {
        if (!columns.includes(column)) {
          refusals.push({ line: linesRead, reason: `the header has no "${column}" column` });
        }
      }
      return columns;
    },
    relax_column_count: false,
    skip_empty_lines: true,
    skip_records_with_error: true,
    max_record_size: MAX_CSV_RECORD,
    // Line numbers come from the raw text (see above), not from `info`.
    raw: true,
    // With raw on, a record comes here as { record, raw }.
    on_record: (output: { record: Record<string, string>; raw?: string }): Entry => {
      const { record, raw } = output;
      return { row: rowOfRecord(startLine(raw), record) };
    },
    on_skip: (error, raw) => {
      const line = startLine(raw);
      if (error?.code === 'CSV_RECORD_INCONSISTENT_COLUMNS') {
        // A line of spaces was skipped as blank before, and still is.
        if (raw?.trim() === '') return;
        const found = (error as { record?: unknown[] }).record?.length ?? 0;
        refusals.push({ line, reason: `${found} fields where the header has ${columns.length}` });
        return;
      }
      // After a quoting error neither the records nor the line count that follow can be trusted.
      throw new ImportFileError(
        `line ${line}: not valid CSV (${error?.code ?? 'unknown error'}); nothing was imported`,
      );
    },
  });
  pipeline(createReadStream(path), parser, () => {
    // A read or parse error destroys the parser with it, and the loop below throws it.
  });
  for await (const entry of parser as AsyncIterable<Entry>) {
    while (refusals.length > 0) yield { refused: refusals.shift()! };
    yield entry;
  }
  while (refusals.length > 0) yield { refused: refusals.shift()! };
}

async function formatOf(path: string): Promise<'csv' | 'jsonl'> {
  const ext = extname(path).toLowerCase();
  if (ext === '.csv') return 'csv';
  if (ext === '.jsonl' || ext === '.ndjson' || ext === '.json') return 'jsonl';
  const file = await open(path);
  try {
    const { buffer, bytesRead } = await file.read(Buffer.alloc(1024), 0, 1024, 0);
    const start = buffer
      .subarray(0, bytesRead)
      .toString('utf8')
      .replace(/^\uFEFF/, '');
    return start.trimStart().startsWith('{') ? 'jsonl' : 'csv';
  } finally {
    await file.close();
  }
}

function entries(path: string, format: 'csv' | 'jsonl'): AsyncGenerator<Entry> {
  return format === 'csv' ? csvRecords(path) : jsonLines(path);
}

export interface Progress {
  update(done: number, total: number, startedAt: number): void;
  finish(): void;
}

/** A redrawn bar with rate on a terminal; a plain line every few seconds otherwise. */
export function progressReporter(stream: NodeJS.WriteStream): Progress {
  let last = 0;
  const rate = (done: number, startedAt: number) => done / Math.max(0.001, (Date.now() - startedAt) / 1000);
  if (stream.isTTY) {
    return {
      update(done, total, startedAt) {
        if (Date.now() - last < 100 && done < total) return;
        last = Date.now();
        const width = 30;
        const filled = total === 0 ? width : Math.round((done / total) * width);
        stream.write(
          `\r[${'#'.repeat(filled)}${' '.repeat(width - filled)}] ${done}/${total} ${(total ? (done / total) * 100 : 100).toFixed(1)}% ${rate(done, startedAt).toFixed(1)} rows/s `,
        );
      },
      finish: () => stream.write('\n'),
    };
  }
  return {
    update(done, total, startedAt) {
      if (Date.now() - last < 5000 && done < total) return;
      last = Date.now();
      stream.write(`processed ${done}/${total} rows (${rate(done, startedAt).toFixed(1)} rows/s)\n`);
    },
    finish: () => {},
  };
}

/** Rows per batch: far under either store's limit on bound parameters, and a short transaction. */
const BATCH_ROWS = 500;

/** Every line checked, in file order: the refusals, and how many lines there are. */
async function checkAll(path: string, format: 'csv' | 'jsonl', now: number) {
  const refused: Refusal[] = [];
  let total = 0;
  for await (const entry of entries(path, format)) {
    total += 1;
    if ('refused' in entry) refused.push(entry.refused);
    else
      await checkImportRow(entry.row, now).catch((error: unknown) => {
        refused.push(refusalOf(entry.row.line, error));
      });
  }
  refused.sort((x, y) => x.line - y.line);
  return { refused, total };
}

/**
 * Imports FILE (see the top of this file). `concurrency`: HASH_CONCURRENCY; a couple more
 * workers than hash slots keep the pool busy while others wait on the database.
 */
export async function importUsers(
  users: UsersService,
  path: string,
  concurrency: number,
  progress: Progress,
  now: () => number = Date.now,
): Promise<ImportReport> {
  const format = await formatOf(path);
  const startedAt = Date.now();
  const seconds = () => (Date.now() - startedAt) / 1000;
  // First pass: every line checked, nothing written. Both passes stream the file, so its size is
  // not bounded by memory.
  const checked = await checkAll(path, format, now());
  if (checked.refused.length > 0)
    return { total: checked.total, imported: 0, skipped: 0, refused: checked.refused, seconds: seconds() };

  const { total } = checked;
  let done = 0;
  let imported = 0;
  let skipped = 0;
  const write = async (rows: CheckedImport[]) => {
    if (rows.length === 0) return;
    const accounts = await prepareImports(users, rows, concurrency + 2, () => {
      done += 1;
      progress.update(done, total, startedAt);
    });
    for (const result of await users.importAccounts(accounts)) {
      if (result === 'imported') imported++;
      else skipped++;
    }
  };
  try {
    let batch: CheckedImport[] = [];
    for await (const entry of entries(path, format)) {
      // Checked again as it is read: the same rules give the same answers, unless the file changed.
      const row = 'row' in entry ? await checkImportRow(entry.row, now()).catch(() => undefined) : undefined;
      if (row === undefined) {
        const line = 'row' in entry ? entry.row.line : entry.refused.line;
        throw new ImportFileError(`line ${line} changed while it was being imported`);
      }
      batch.push(row);
      if (batch.length >= BATCH_ROWS) {
        await write(batch);
        batch = [];
      }
    }
    await write(batch);
  } catch (error) {
    progress.finish();
    const reason = error instanceof Error ? error.message : String(error);
    throw new ImportInterruptedError(
      `the import stopped after ${imported} accounts were imported (${skipped} skipped): ${reason}. ` +
        'Run the same command again to import the rest: accounts already imported are skipped.',
    );
  }
  if (done === 0) progress.update(done, total, startedAt);
  progress.finish();
  return { total, imported, skipped, refused: [], seconds: seconds() };
}
