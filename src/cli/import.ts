// `users import FILE`: JSON lines or CSV, every row checked by the registration rules, hashed in
// parallel within the configured hash concurrency, safe to rerun (existing emails are skipped).
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
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

/** RFC 4180 fields of one CSV record (quotes, doubled quotes, commas inside quotes). */
function csvFields(record: string): string[] {
  const fields: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < record.length; i++) {
    const c = record[i]!;
    if (quoted) {
      if (c === '"' && record[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      fields.push(field);
      field = '';
    } else field += c;
  }
  fields.push(field);
  return fields;
}

function parseRows(text: string, format: 'csv' | 'jsonl'): { rows: ImportRow[]; refused: Refusal[] } {
  const rows: ImportRow[] = [];
  const refused: Refusal[] = [];
  const lines = text.split(/\r?\n/);
  let header: string[] | undefined;
  lines.forEach((raw, index) => {
    const line = index + 1;
    if (raw.trim() === '') return;
    if (format === 'jsonl') {
      try {
        const value: unknown = JSON.parse(raw);
        if (typeof value !== 'object' || value === null || Array.isArray(value))
          throw new Error('not an object');
        const { email, name, password } = value as Record<string, unknown>;
        rows.push({ line, email, name, password });
      } catch {
        refused.push({ line, reason: 'not a JSON object' });
      }
      return;
    }
    const fields = csvFields(raw);
    if (!header) {
      header = fields.map((f) => f.trim().toLowerCase());
      for (const column of ['email', 'name', 'password']) {
        if (!header.includes(column)) refused.push({ line, reason: `the header has no "${column}" column` });
      }
      return;
    }
    const at = (column: string) => fields[header!.indexOf(column)];
    rows.push({ line, email: at('email'), name: at('name'), password: at('password') });
  });
  return { rows, refused };
}

function formatOf(path: string, text: string): 'csv' | 'jsonl' {
  const ext = extname(path).toLowerCase();
  if (ext === '.csv') return 'csv';
  if (ext === '.jsonl' || ext === '.ndjson' || ext === '.json') return 'jsonl';
  return text.trimStart().startsWith('{') ? 'jsonl' : 'csv';
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

export async function importUsers(
  users: UsersService,
  path: string,
  concurrency: number,
  progress: Progress,
): Promise<ImportReport> {
  const text = await readFile(path, 'utf8');
  const { rows, refused } = parseRows(text, formatOf(path, text));
  const unreadable = refused.length;
  const startedAt = Date.now();
  let next = 0;
  // Unreadable lines are already settled: progress counts every line of data.
  const total = rows.length + unreadable;
  let done = unreadable;
  let imported = 0;
  let skipped = 0;
  const worker = async () => {
    while (next < rows.length) {
      const row = rows[next++]!;
      try {
        if (
          typeof row.email !== 'string' ||
          typeof row.name !== 'string' ||
          typeof row.password !== 'string'
        ) {
          throw new AppError('VALIDATION_FAILED', 'email, name and password must all be present as text');
        }
        await users.register({ email: row.email, name: row.name, password: row.password });
        imported++;
      } catch (error) {
        if (error instanceof AppError && error.code === 'EMAIL_TAKEN') skipped++;
        else if (error instanceof AppError && error.code === 'VALIDATION_FAILED') {
          refused.push({ line: row.line, reason: error.message });
        } else throw error;
      }
      done++;
      progress.update(done, total, startedAt);
    }
  };
  // A couple more workers than hash slots keep the hashing pool busy while others do I/O.
  await Promise.all(Array.from({ length: Math.max(1, concurrency + 2) }, worker));
  if (rows.length === 0) progress.update(done, total, startedAt);
  progress.finish();
  refused.sort((x, y) => x.line - y.line);
  return {
    total: rows.length + unreadable,
    imported,
    skipped,
    refused,
    seconds: (Date.now() - startedAt) / 1000,
  };
}
