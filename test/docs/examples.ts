// Reads and runs the examples of Usher's Markdown docs as a reader would (test/docs/examples.test.ts).
//
// A block whose info string is `sh doc-test` holds examples: each `$ ` line (with its `\`
// continuation lines) is a command, and the lines under it, up to the next `$ `, are what it prints.
// - `$ npm start`, with settings before it (`$ PROFILE=a npm start`), is not run in sh: it (re)starts
//   the server with those settings, on the same database and address. Without one, the first
//   command starts a server with none.
// - A block whose info string is `<language> doc-test file=NAME` is written to NAME in the folder the
//   commands run in, before the commands after it run (`$ node check-session.mjs`).
// - Shell variables a command assigns (`token=$(curl …)`) keep their values in later commands.
//
// What may differ from what a doc shows, and nothing else:
// - `localhost:3000`, in commands, files and settings, is the test server's address;
// - every ISO 8601 UTC time (2026-11-22T10:00:00.000Z) stands for any such time;
// - `…` in an output stands for any text within its line (a token, an id);
// - with `curl -i`, the doc shows the status line and only the headers it is about: each must be
//   among the response's headers (CRLF read as LF); the body after the blank line is compared whole.
// The HTTP status is checked too: the `# HTTP NNN` comment on the command, the status line of `-i`
// output, or else any 2xx (of the command's last curl).
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, runProcess, type ServerProcess, startServer } from '../helpers/process.ts';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export type Step =
  | { readonly kind: 'start'; readonly where: string; readonly settings: Record<string, string> }
  | { readonly kind: 'file'; readonly where: string; readonly name: string; readonly text: string }
  | { readonly kind: 'run'; readonly where: string; readonly command: string; readonly expected: string };

const START = /^((?:[A-Z][A-Z0-9_]*=\S*\s+)*)npm start$/;

/** The steps of one Markdown file, in order. `file` is the path shown in failure messages. */
export function docSteps(text: string, file: string): Step[] {
  const steps: Step[] = [];
  // The fenced block we are in: examples, a file to write, or one that is not run.
  let block:
    | { kind: 'sh' }
    | { kind: 'file'; where: string; name: string; lines: string[] }
    | { kind: 'other' }
    | undefined;
  let current: { line: number; command: string[]; output: string[] } | undefined;
  const finish = () => {
    if (!current) return;
    while (current.output.at(-1) === '') current.output.pop();
    const where = `${file}:${current.line}`;
    const command = current.command.join('\n');
    const start = START.exec(command.trim());
    if (start) {
      assert.equal(current.output.length, 0, `${where}: "npm start" shows no output`);
      const settings = Object.fromEntries(
        start[1]!
          .trim()
          .split(/\s+/)
          .filter(Boolean)
          .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
      );
      steps.push({ kind: 'start', where, settings });
    } else {
      steps.push({ kind: 'run', where, command, expected: current.output.join('\n') });
    }
    current = undefined;
  };
  for (const [index, line] of text.split('\n').entries()) {
    const fence = /^```(.*)$/.exec(line);
    if (fence && block) {
      finish();
      if (block.kind === 'file') {
        steps.push({
          kind: 'file',
          where: block.where,
          name: block.name,
          text: `${block.lines.join('\n')}\n`,
        });
      }
      block = undefined;
      continue;
    }
    if (fence) {
      const info = fence[1]!.trim();
      const named = /^\S+ doc-test file=(\S+)$/.exec(info);
      if (info === 'sh doc-test') block = { kind: 'sh' };
      else if (named) block = { kind: 'file', where: `${file}:${index + 1}`, name: named[1]!, lines: [] };
      else {
        assert.ok(
          !/\bdoc-test\b/.test(info),
          `${file}:${index + 1}: a doc-test block this test does not read`,
        );
        block = { kind: 'other' };
      }
      continue;
    }
    if (block?.kind === 'file') block.lines.push(line);
    if (block?.kind !== 'sh') continue;
    if (line.startsWith('$ ')) {
      finish();
      current = { line: index + 1, command: [line.slice(2)], output: [] };
    } else if (current && current.output.length === 0 && current.command.at(-1)!.endsWith('\\')) {
      current.command.push(line);
    } else if (current) {
      current.output.push(line);
    } else if (line.trim() !== '') {
      throw new Error(`${file}:${index + 1}: a line outside any "$ " example in a doc-test block`);
    }
  }
  assert.equal(block, undefined, `${file}: a fenced block is not closed`);
  return steps;
}

const TIMESTAMP = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g;
const normalise = (text: string) => text.replaceAll('\r\n', '\n').replace(TIMESTAMP, '<timestamp>').trimEnd();
const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Whether `actual` is what `shown` shows, `…` standing for any text within a line. */
export function shows(shown: string, actual: string): boolean {
  if (!shown.includes('…')) return shown === actual;
  return new RegExp(`^${shown.split('…').map(literal).join('[^\\n]*?')}$`).test(actual);
}

interface Ran {
  readonly output: string;
  readonly status: number | undefined;
  readonly stderr: string;
}

/** Checks what a command printed (and its status) against what the doc shows. */
export function check(step: Step & { kind: 'run' }, actual: Ran): void {
  const where = `${step.where}: ${step.command.split('\n')[0]!.replace(/ *\\$/, '')}`;
  const expected = normalise(step.expected);
  const output = normalise(actual.output);
  const statusLine = /^HTTP\/[\d.]+ (\d{3})/.exec(expected);
  const commented = /# HTTP (\d{3})\b/.exec(step.command);
  const status = statusLine?.[1] ?? commented?.[1];
  if (status === undefined) {
    if (actual.status !== undefined)
      assert.ok(
        actual.status >= 200 && actual.status < 300,
        `${where}: HTTP status ${actual.status}, not 2xx\n${actual.stderr}`,
      );
  } else assert.equal(actual.status, Number(status), `${where}: HTTP status\n${actual.stderr}`);

  if (!statusLine) {
    assert.ok(
      shows(expected, output),
      `${where}\nshown:\n${expected}\nprinted:\n${output}\n${actual.stderr}`,
    );
    return;
  }
  const [shownHead = '', ...shownBody] = expected.split('\n\n');
  const [head = '', ...body] = output.split('\n\n');
  const [shownStatus, ...shownHeaders] = shownHead.split('\n');
  const [firstLine, ...headers] = head.split('\n');
  assert.equal(firstLine, shownStatus, `${where}: status line`);
  const received = headers.map((h) => h.replace(/^[^:]+/, (name) => name.toLowerCase()));
  for (const header of shownHeaders) {
    assert.ok(
      received.some((h) => shows(header, h)),
      `${where}: header "${header}" not among\n${received.join('\n')}`,
    );
  }
  assert.ok(
    shows(shownBody.join('\n\n'), body.join('\n\n')),
    `${where}: body\nshown:\n${shownBody.join('\n\n')}\nprinted:\n${body.join('\n\n')}`,
  );
}

/** Names a command assigns at the start of a statement (`token=$(…)`, `id=3; …`). */
const assigned = (command: string) =>
  [...command.matchAll(/(?:^|[\n;]|&&|\|\|)\s*([A-Za-z_][A-Za-z0-9_]*)=/g)].map((m) => m[1]!);
const quote = (value: string) => `'${value.replaceAll("'", `'\\''`)}'`;

/**
 * Runs the steps of `files` in order, as one reader would: one database (`databaseUrl`), one
 * address, one folder to work in, shell variables carried from command to command.
 */
export async function runDocs(files: readonly string[], databaseUrl: string): Promise<void> {
  const port = await freePort();
  const address = `127.0.0.1:${port}`;
  const here = (text: string) => text.replaceAll('localhost:3000', address);
  const folder = mkdtempSync(join(tmpdir(), 'usher-docs-'));
  const state = join(folder, '.doc-test-variables');
  const variables = new Map<string, string>();
  let server: ServerProcess | undefined;
  const start = async (settings: Record<string, string>) => {
    await server?.stop();
    server = undefined;
    const env = Object.fromEntries(Object.entries(settings).map(([k, v]) => [k, here(v)]));
    server = await startServer({ ...env, DATABASE_URL: databaseUrl, PORT: String(port) });
  };
  try {
    for (const file of files) {
      for (const step of docSteps(readFileSync(join(ROOT, file), 'utf8'), file)) {
        if (step.kind === 'start') {
          await start(step.settings);
        } else if (step.kind === 'file') {
          mkdirSync(dirname(join(folder, step.name)), { recursive: true });
          writeFileSync(join(folder, step.name), here(step.text));
        } else {
          if (!server) await start({});
          const names = [...new Set([...variables.keys(), ...assigned(step.command)])];
          const script = [
            `curl() { command curl -w '%{stderr}\\n@@status %{http_code}\\n' "$@"; }`,
            ...[...variables].map(([name, value]) => `${name}=${quote(value)}`),
            here(step.command),
            '__status=$?',
            `{ ${names.map((n) => `printf '%s\\0%s\\0' ${n} "$${n}"`).join('; ') || ':'}; } > ${quote(state)}`,
            'exit $__status',
          ].join('\n');
          const run = await runProcess(
            'sh',
            ['-c', script],
            { PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`, HOME: folder },
            '',
            folder,
          );
          const saved = readFileSync(state, 'utf8').split('\0');
          for (let i = 0; i + 1 < saved.length; i += 2) variables.set(saved[i]!, saved[i + 1]!);
          const statuses = [...run.stderr.matchAll(/^@@status (\d{3})$/gm)];
          const stderr = run.stderr.replace(/\n?@@status \d{3}\n?/g, '\n').trim();
          assert.equal(run.code, 0, `${step.where}: exit code ${run.code}\n${step.command}\n${stderr}`);
          check(step, {
            output: run.stdout,
            status: statuses.length > 0 ? Number(statuses.at(-1)![1]) : undefined,
            stderr,
          });
        }
      }
    }
  } finally {
    await server?.stop();
    rmSync(folder, { recursive: true, force: true });
  }
}
