// What the packaging tests share: the repository's files, the names of Usher's settings, a reader
// of the Dockerfile, and a server process started in a directory of the test's choosing (the
// unit's working directory, the image's WORKDIR), which test/helpers/process.ts does not do.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { freePort } from '../helpers/process.ts';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const read = (file: string) => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');

/**
 * Every setting Usher reads: the names src/config.ts (the core) and each feature's
 * src/<feature>/settings.ts (its section) pass to their readers ('PORT') and read directly
 * (env.WORKERS). Read from the source, so a setting added there counts at once.
 */
export function configNames(): Set<string> {
  const src = new URL('../../src/', import.meta.url);
  const sections = readdirSync(src)
    .filter((name) => existsSync(new URL(`${name}/settings.ts`, src)))
    .map((name) => `src/${name}/settings.ts`);
  const names = new Set<string>();
  for (const source of ['src/config.ts', ...sections].map(read)) {
    for (const [, name] of source.matchAll(/'([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Z]{4,})'/g)) names.add(name!);
    for (const [, name] of source.matchAll(/\benv\.([A-Z][A-Z0-9_]+)/g)) names.add(name!);
  }
  return names;
}

/** .env syntax as compose, systemd and Node read it alike: NAME=value lines, comments, blanks. */
export function parseEnvLines(text: string): Array<[name: string, value: string]> {
  const pairs: Array<[string, string]> = [];
  for (const [index, line] of text.split('\n').entries()) {
    if (line.trim() === '' || line.startsWith('#')) continue;
    const match = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
    if (!match) throw new Error(`line ${index + 1} is not NAME=value: ${line}`);
    pairs.push([match[1]!, match[2]!]);
  }
  return pairs;
}

export interface Instruction {
  keyword: string;
  args: string;
  stage: number;
}

/** The Dockerfile's instructions, continuation lines joined, comments left out, by stage. */
export function dockerfile(text = read('Dockerfile')): Instruction[] {
  const joined = text
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('#'))
    .join('\n')
    .replace(/\\\n/g, ' ');
  const instructions: Instruction[] = [];
  let stage = -1;
  for (const line of joined.split('\n')) {
    const match = /^\s*([A-Za-z]+)\s+(.*)$/.exec(line);
    if (!match) continue;
    const keyword = match[1]!.toUpperCase();
    if (keyword === 'FROM') stage += 1;
    instructions.push({ keyword, args: match[2]!.trim(), stage });
  }
  return instructions;
}

/** COPY's parts: its flags (--from=…), sources and destination. */
export function copyParts(args: string): { flags: Record<string, string>; sources: string[]; dest: string } {
  const words = args.split(/\s+/);
  const flags: Record<string, string> = {};
  while (words[0]?.startsWith('--')) {
    const [name, value = ''] = words.shift()!.slice(2).split('=');
    flags[name!] = value;
  }
  const dest = words.pop()!;
  return { flags, sources: words, dest };
}

export interface Running {
  child: ChildProcess;
  url: string;
  output: () => string;
  stop(): Promise<void>;
}

/** `command` (argv) run in `cwd` with exactly `env` (and PATH), until it answers /healthz. */
export async function startIn(
  command: string[],
  cwd: string,
  env: Record<string, string>,
  // A limit on a failure only (a server that answers is used at once): generous for a loaded machine.
  timeoutMs = 120_000,
): Promise<Running> {
  const port = env.PORT ?? String(await freePort());
  const child = spawn(command[0]!, command.slice(1), {
    cwd,
    env: { PATH: process.env.PATH ?? '', ...env, PORT: port },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d) => {
    output += d;
  });
  child.stderr!.on('data', (d) => {
    output += d;
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`exited early (${child.exitCode}): ${output}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`did not listen within ${timeoutMs} ms: ${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    child,
    url,
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Registers a user and signs in with them: the server's main path, end to end. */
export async function registersAndSignsIn(url: string, email: string): Promise<void> {
  const password = 'packaging-pass-1';
  const created = await fetch(`${url}/api/users`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, name: 'Packaged', password }),
  });
  if (created.status !== 201) throw new Error(`registration: ${created.status} ${await created.text()}`);
  const signin = await fetch(`${url}/api/signin`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  if (signin.status !== 200) throw new Error(`sign-in: ${signin.status} ${await signin.text()}`);
}
