// `users import FILE`: JSON lines or CSV, every row checked by the registration rules, hashed in
// parallel within the configured hash concurrency, safe to rerun (existing emails are skipped).
// A row without a password (no "password" key or null in JSON lines, no password column in CSV)
// imports an account without one, as `users add --no-password` does: nothing to hash.
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { extname } from 'node:path';
import { createInterface } from 'node:readline';
import { pipeline } from 'node:stream';
import { type Parser, parse } from 'csv-parse';
import { AppError } from '../shared/errors.ts';
import type { UsersService } from '../users/service.ts';

export interface ImportRow {
  line: number;
  email: unknown;
  name: unknown;
  password: unknown;
}

export interface Refusal {
  line: number;
  reason: string;
}

export interface ImportReport {
  total: number;
  imported: number;
  skipped: number;
  refused: Refusal[];
  seconds: number;
}

/** One data line of the file: a row to register, or a line refused before any registration. */
type Entry = { row: ImportRow } | { refused: Refusal };

/** A file that cannot be read as a whole (broken CSV quoting): refused before anything is imported. */
class ImportFileError extends Error {}

const LINE_BREAKS = /\r\n|\r|\n/g;
const LEADING_BREAKS = /^(?:\r\n|\r|\n)*/;
const breaks = (text: string) => text.match(LINE_BREAKS)?.length ?? 0;
/** The password column is optional: a file without one imports accounts without passwords. */
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
    const { email, name, password } = value as Record<string, unknown>;
    yield { row: { line, email, name, password } };
  }
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
      columns = header.map((name) => name.trim().toLowerCase());
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
      const line = startLine(raw);
      return { row: { line, email: record.email, name: record.name, password: record.password } };
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

export async function importUsers(
  users: UsersService,
  path: string,
  concurrency: number,
  progress: Progress,
): Promise<ImportReport> {
  const format = await formatOf(path);
  // A first pass counts the rows for the progress bar (and finds broken CSV before anything is
  // imported); the file is streamed both times, so its size is not bounded by memory.
  let total = 0;
  for await (const _ of entries(path, format)) total += 1;
  const startedAt = Date.now();
  const refused: Refusal[] = [];
  let done = 0;
  let imported = 0;
  let skipped = 0;
  const counted = (n = 1) => {
    done += n;
    progress.update(done, total, startedAt);
  };
  // Rows without a password go in batches, many in one statement and transaction
  // (UsersService.importWithoutPasswords, no mail): a million rows take minutes, one by one hours
  // (docs/benchmarks.md, round 12).
  let batch: ImportRow[] = [];
  const flush = async (rows: ImportRow[]) => {
    if (rows.length === 0) return;
    const outcomes = await users.importWithoutPasswords(
      rows.map((row) => ({ email: row.email as string, name: row.name as string })),
    );
    for (const [i, outcome] of outcomes.entries()) {
      if (outcome === 'imported') imported++;
      else if (outcome === 'skipped') skipped++;
      else if (outcome.code === 'VALIDATION_FAILED')
        refused.push({ line: rows[i]!.line, reason: outcome.message });
      else throw outcome;
    }
    counted(rows.length);
  };
  const source = entries(path, format);
  const worker = async () => {
    // The workers share one generator: each next() waits for the previous one, so every entry
    // goes to exactly one worker and the file is read only as fast as rows are registered.
    for (let next = await source.next(); !next.done; next = await source.next()) {
      const entry = next.value;
      if ('refused' in entry) {
        refused.push(entry.refused);
      } else if (withoutPassword(entry.row)) {
        // Taken whole by the worker that fills the batch; the others read on meanwhile.
        batch.push(entry.row);
        if (batch.length >= BATCH_ROWS) {
          const full = batch;
          batch = [];
          await flush(full);
        }
        continue;
      } else {
        await register(
          users,
          entry.row,
          refused,
          () => imported++,
          () => skipped++,
        );
      }
      counted();
    }
  };
  // A couple more workers than hash slots keep the hashing pool busy while others do I/O.
  await Promise.all(Array.from({ length: Math.max(1, concurrency + 2) }, worker));
  await flush(batch);
  if (done === 0) progress.update(done, total, startedAt);
  progress.finish();
  refused.sort((x, y) => x.line - y.line);
  return { total: done, imported, skipped, refused, seconds: (Date.now() - startedAt) / 1000 };
}

/** A row for the batch: email and name as text, and no password (absent, or JSON null). */
function withoutPassword(row: ImportRow): boolean {
  return (
    typeof row.email === 'string' &&
    typeof row.name === 'string' &&
    (row.password === undefined || row.password === null)
  );
}

async function register(
  users: UsersService,
  row: ImportRow,
  refused: Refusal[],
  imported: () => void,
  skipped: () => void,
): Promise<void> {
  try {
    if (typeof row.email !== 'string' || typeof row.name !== 'string') {
      throw new AppError('VALIDATION_FAILED', 'email and name must both be present as text');
    }
    // Absent (or JSON null): an account without a password. Present, it must be text and pass the
    // password rules: an empty or mistyped value is refused, not taken as "none".
    if (row.password === undefined || row.password === null) {
      await users.registerWithoutPassword({ email: row.email, name: row.name });
    } else if (typeof row.password !== 'string') {
      throw new AppError('VALIDATION_FAILED', 'password must be text when present');
    } else {
      await users.register({ email: row.email, name: row.name, password: row.password });
    }
    imported();
  } catch (error) {
    if (error instanceof AppError && error.code === 'EMAIL_TAKEN') skipped();
    else if (error instanceof AppError && error.code === 'VALIDATION_FAILED') {
      refused.push({ line: row.line, reason: error.message });
    } else throw error;
  }
}
