// The README's examples, run as a reader would: every fenced block whose info string is
// `sh readme-test profile=a|b`, in the order they appear, on one fresh database, each block
// against a server started in its profile (a new server when the profile changes, on the same
// database, as the README says). Each `$ ` line (with its `\` continuation lines) runs in sh with
// the real curl; what it prints must be what the lines under it show. Other blocks are not run.
//
// What may differ, and nothing else:
// - the port: `localhost:3000` is the test server's address;
// - timestamps: every ISO 8601 UTC time (2026-11-22T10:00:00.000Z) stands for any such time;
// - with `curl -i`, the README shows the status line and only the headers it is about: each must
//   be among the response's headers (CRLF read as LF); the body after the blank line is compared whole.
// The HTTP status is checked too: the `# HTTP NNN` comment on the command, the status line of
// `-i` output, or else any 2xx.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runProcess, type ServerProcess, startServer } from '../helpers/process.ts';
import { describeUnless } from '../helpers/skip.ts';
import { describeEachStore } from '../helpers/stores.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

interface Example {
  /** Line of the `$ ` in README.md, for the failure message. */
  readonly line: number;
  readonly profile: 'a' | 'b';
  readonly command: string;
  readonly expected: string;
}

function readmeExamples(text: string): Example[] {
  const examples: Example[] = [];
  const lines = text.split('\n');
  let profile: 'a' | 'b' | undefined;
  let current: { line: number; command: string[]; output: string[] } | undefined;
  const finish = () => {
    if (current && profile) {
      while (current.output.at(-1) === '') current.output.pop();
      examples.push({
        line: current.line,
        profile,
        command: current.command.join('\n'),
        expected: current.output.join('\n'),
      });
    }
    current = undefined;
  };
  for (const [index, line] of lines.entries()) {
    const fence = /^```(.*)$/.exec(line);
    if (fence) {
      finish();
      const marked = /^sh readme-test profile=([ab])$/.exec(fence[1]!.trim());
      profile = profile === undefined && marked ? (marked[1] as 'a' | 'b') : undefined;
      continue;
    }
    if (!profile) continue;
    if (line.startsWith('$ ')) {
      finish();
      current = { line: index + 1, command: [line.slice(2)], output: [] };
    } else if (current && current.output.length === 0 && current.command.at(-1)!.endsWith('\\')) {
      current.command.push(line);
    } else if (current) {
      current.output.push(line);
    } else if (line.trim() !== '') {
      throw new Error(`README.md:${index + 1}: a line outside any "$ " example in a readme-test block`);
    }
  }
  return examples;
}

const TIMESTAMP = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g;
const normalise = (text: string) => text.replaceAll('\r\n', '\n').replace(TIMESTAMP, '<timestamp>').trimEnd();

/** Runs one example's command in sh; curl also writes the status code on a last line of its own. */
async function run(
  command: string,
  address: string,
): Promise<{ output: string; status: number; stderr: string }> {
  const script = `curl() { command curl -w '\\n%{http_code}' "$@"; }\n${command.replaceAll('localhost:3000', address)}`;
  const { stdout, stderr } = await runProcess('sh', ['-c', script], {});
  const cut = stdout.lastIndexOf('\n');
  return { output: stdout.slice(0, cut), status: Number(stdout.slice(cut + 1)), stderr };
}

function check(example: Example, actual: { output: string; status: number; stderr: string }): void {
  const where = `README.md:${example.line}: ${example.command.split('\n')[0]!.replace(/ *\\$/, '')}`;
  const expected = normalise(example.expected);
  const output = normalise(actual.output);
  const statusLine = /^HTTP\/[\d.]+ (\d{3})/.exec(expected);
  const commented = /# HTTP (\d{3})\b/.exec(example.command);
  const status = Number(statusLine?.[1] ?? commented?.[1] ?? Number.NaN);
  if (Number.isNaN(status))
    assert.ok(actual.status >= 200 && actual.status < 300, `${where}: HTTP status ${actual.status}, not 2xx`);
  else assert.equal(actual.status, status, `${where}: HTTP status ${actual.stderr}`);

  if (!statusLine) {
    assert.equal(output, expected, where);
    return;
  }
  const [shownHead = '', ...shownBody] = expected.split('\n\n');
  const [head = '', ...body] = output.split('\n\n');
  const [shownStatus, ...shownHeaders] = shownHead.split('\n');
  const [firstLine, ...headers] = head.split('\n');
  assert.equal(firstLine, shownStatus, `${where}: status line`);
  const received = new Set(headers.map((h) => h.replace(/^[^:]+/, (name) => name.toLowerCase())));
  for (const header of shownHeaders) {
    assert.ok(received.has(header), `${where}: header "${header}" not among ${[...received].join(' | ')}`);
  }
  assert.equal(body.join('\n\n'), shownBody.join('\n\n'), `${where}: body`);
}

const examples = readmeExamples(README);

test('ISSUE 15: the README has marked examples for both profiles, profile B first (the default)', () => {
  assert.ok(examples.length >= 10, `${examples.length} examples`);
  assert.equal(examples[0]?.profile, 'b');
  assert.ok(examples.some((e) => e.profile === 'a'));
});

const hasCurl = spawnSync('curl', ['--version']).status === 0;

describeUnless(hasCurl ? false : 'curl is not installed', 'README examples', () => {
  describeEachStore('ISSUE 15: README examples', (store) => {
    // One test: each example leans on the ones before it, and tests inside a file run shuffled.
    test('run in order on a fresh database, each in its profile, print what the README shows', async () => {
      let server: ServerProcess | undefined;
      let profile: string | undefined;
      try {
        for (const example of examples) {
          if (example.profile !== profile) {
            await server?.stop();
            server = await startServer({ DATABASE_URL: store.url, PROFILE: example.profile });
            profile = example.profile;
          }
          check(example, await run(example.command, new URL(server!.url).host));
        }
      } finally {
        await server?.stop();
      }
    });
  });
});
