// POST /api/admin/users/import (CONTRACT "Users from other systems"): `usher users import` over
// HTTP, for an admin. The body is JSON lines, each line checked by the import's rules
// (users/imports.ts) before any is written; one bad line refuses the whole body (400, every bad
// line named), and a good body goes in one transaction with its audit records. Its own plugin, so
// the JSON-lines parser it registers is this route's alone.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { type ErrorRenderer, renderWithMessage } from '../plugins/errors.ts';
import { jsonShapeFault } from '../plugins/json-body.ts';
import { describeBytes } from '../shared/body-limits.ts';
import { AppError } from '../shared/errors.ts';
import { component, failures, MESSAGE_MAX, success } from '../shared/schemas.ts';
import {
  type CheckedImport,
  checkImportRow,
  type ImportRefusal,
  type ImportRow,
  prepareImports,
  refusalOf,
  rowOfObject,
} from '../users/index.ts';
import type { UsersService } from '../users/service.ts';

/** Lines per request: a larger export goes in several requests (emails already imported are skipped). */
export const IMPORT_LINES_MAX = 1000;
/** 1,000 lines of the longest email and name, every character escaped, fit with room to spare. */
export const IMPORT_BODY_MAX = 4 * 1024 * 1024;
/** Brackets a line may open: its object, and a little nesting in fields the import ignores. */
const LINE_DEPTH = 2;
const LINE_CONTAINERS = 16;
const MEDIA_TYPES = ['application/x-ndjson', 'application/jsonl'];

export const ImportReportComponent = component(
  'UsersImportReport',
  Type.Object(
    {
      lines: Type.Integer({
        format: 'int32',
        minimum: 1,
        maximum: IMPORT_LINES_MAX,
        description: 'Data lines read.',
      }),
      imported: Type.Integer({
        format: 'int32',
        minimum: 0,
        maximum: IMPORT_LINES_MAX,
        description: 'Accounts made.',
      }),
      skipped: Type.Integer({
        format: 'int32',
        minimum: 0,
        maximum: IMPORT_LINES_MAX,
        description:
          'Lines whose email already had an account, or came on an earlier line: left as they were.',
      }),
    },
    { additionalProperties: false, description: 'What an import did.' },
  ),
);

const Body = Type.String({
  maxLength: IMPORT_BODY_MAX,
  description: `JSON lines (at most ${IMPORT_LINES_MAX}), one object per line: \`email\` and \`name\` (required), then \`password\` (plain text, by the registration rules) or \`passwordHash\` (the hash the user's old system keeps: bcrypt \`$2a$\`/\`$2b$\`/\`$2y$\`, argon2 \`$argon2id$\`/\`$argon2i$\`, scrypt \`$scrypt$ln=…,r=…,p=…$…\` and PBKDF2 \`$pbkdf2-sha256$i=…$…\` in PHC form, or Django's \`pbkdf2_sha256$…\`), never both, and optionally \`emailVerified\` (boolean) and \`createdAt\` (date-time with its zone). Other fields are ignored.`,
});

/** The route's 415 names the media type it reads; everything else is rendered as on every route. */
const renderError: ErrorRenderer = (failure, request) =>
  failure.statusCode === 415
    ? {
        statusCode: 415,
        body: { error: failure.code, message: `Content-Type: must be ${MEDIA_TYPES[0]} (JSON lines)` },
      }
    : renderWithMessage(failure, request);

/**
 * The message of a refused body: how many lines, then each (number and reason) as far as a
 * message goes, and how many more.
 */
function refusedMessage(refused: readonly ImportRefusal[], lines: number): string {
  let message = `${refused.length} of ${lines} lines refused; nothing was imported.`;
  for (const [i, { line, reason }] of refused.entries()) {
    const part = ` line ${line}: ${reason}.`;
    const rest = refused.length - i;
    const tail = rest > 1 ? ` And ${rest - 1} more.` : '';
    if (message.length + part.length + tail.length > MESSAGE_MAX) {
      message += ` And ${rest} more.`;
      break;
    }
    message += part;
  }
  return message;
}

/** A line's row, or why it is refused before any rule is applied. */
function rowOf(line: number, text: string): ImportRow | ImportRefusal {
  if (jsonShapeFault(Buffer.from(text), LINE_DEPTH, LINE_CONTAINERS) !== undefined)
    return { line, reason: 'is nested deeper than an import line can be' };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { line, reason: 'not a JSON object' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { line, reason: 'not a JSON object' };
  try {
    return rowOfObject(line, value as Record<string, unknown>);
  } catch (error) {
    return refusalOf(line, error);
  }
}

export interface ImportRoutesOptions {
  users: UsersService;
  /** HASH_CONCURRENCY: plain passwords are hashed this many at a time, in the account lane. */
  hashConcurrency: number;
  now: () => number;
}

export const adminImportRoutes: FastifyPluginAsyncTypebox<ImportRoutesOptions> = async (
  app,
  { users, hashConcurrency, now },
) => {
  // This plugin's own parsers: JSON lines as text; application/json is not a body this route reads.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser(MEDIA_TYPES, { parseAs: 'string' }, (_request, body, done) => done(null, body));

  app.post(
    '/api/admin/users/import',
    {
      bodyLimit: IMPORT_BODY_MAX,
      schema: {
        summary: 'Import users, with their passwords or the hashes of the system they come from',
        operationId: 'adminImportUsers',
        description: `Needs an admin. \`usher users import\` over HTTP: JSON lines (\`Content-Type: application/x-ndjson\`), at most ${IMPORT_LINES_MAX} lines and ${describeBytes(IMPORT_BODY_MAX)} a request. Every line is checked first; when one is bad, the answer is 400 with each bad line's number and reason, and nothing is imported. A hash in a format Usher does not verify, or with an absurd cost (bcrypt above 14, PBKDF2 above 3,000,000 iterations, scrypt above 64 MiB, argon2 above 256 MiB or 16 passes), is a bad line. A good body is imported in one transaction: emails that already have an account are skipped (so a request can be sent again), imported users get no mail, and each sign-in with an imported hash verifies it with its own algorithm and re-hashes it as argon2id. Audited: \`user.created\` (\`via: import\`) for each account and \`admin.users.imported\` for the request.`,
        consumes: MEDIA_TYPES,
        body: Body,
        response: {
          200: success(ImportReportComponent.ref, 'Imported (or skipped, line by line).'),
          ...failures(
            [
              'VALIDATION_FAILED',
              'UNSUPPORTED_MEDIA_TYPE',
              'PAYLOAD_TOO_LARGE',
              'UNAUTHENTICATED',
              'FORBIDDEN',
            ],
            {
              notes: {
                VALIDATION_FAILED:
                  'A line breaks a rule (the message names each bad line by its number, field and rule: nothing was imported), or the body holds no line or too many.',
              },
            },
          ),
        },
      },
      config: { auth: 'admin', noStore: true, renderError },
    },
    async (request) => {
      const text = request.body.replace(/^\uFEFF/, '');
      const rows: ImportRow[] = [];
      const refused: ImportRefusal[] = [];
      let line = 0;
      let lines = 0;
      for (const raw of text.split(/\r\n|\n|\r/)) {
        line += 1;
        if (raw.trim() === '') continue;
        lines += 1;
        if (lines > IMPORT_LINES_MAX)
          throw new AppError(
            'VALIDATION_FAILED',
            `body: more than ${IMPORT_LINES_MAX} lines; send them in several requests (emails already imported are skipped)`,
          );
        const row = rowOf(line, raw);
        if ('reason' in row) refused.push(row);
        else rows.push(row);
      }
      if (lines === 0) throw new AppError('VALIDATION_FAILED', 'body: holds no JSON line');
      const at = now();
      const checked: CheckedImport[] = [];
      for (const row of rows) {
        try {
          checked.push(await checkImportRow(row, at));
        } catch (error) {
          refused.push(refusalOf(row.line, error));
        }
      }
      if (refused.length > 0) {
        refused.sort((x, y) => x.line - y.line);
        throw new AppError('VALIDATION_FAILED', refusedMessage(refused, lines));
      }
      const accounts = await prepareImports(users, checked, hashConcurrency + 2);
      const results = await users.importAccounts(accounts, (counts) => ({
        type: 'admin.users.imported',
        userId: null,
        details: { lines, ...counts },
      }));
      const imported = results.filter((r) => r === 'imported').length;
      return { lines, imported, skipped: lines - imported };
    },
  );
};
