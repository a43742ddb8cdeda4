// `npm start` as a process manager or a container runtime runs it: SIGTERM goes to npm alone.
// npm passes it on to the shell running the script; a shell that forks node would die of it and
// leave node serving, orphaned. The script execs node, so the signal reaches the server itself.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { delimiter, dirname } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { TEST_OUTBOX } from '../helpers/app.ts';
import { freshDatabaseUrl } from '../helpers/databases.ts';
import { waitUntil } from '../helpers/mail.ts';
import { freePort } from '../helpers/process.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const skip = existsSync('/proc/self/stat') ? false : 'needs /proc to find the processes npm started';

/** Every process below `pid`, from the parent pids in /proc. */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // "pid (comm) state ppid …", where comm may hold spaces and parentheses.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
  }
  const found: number[] = [];
  const walk = (parent: number) => {
    for (const child of children.get(parent) ?? []) {
      found.push(child);
      walk(child);
    }
  };
  walk(pid);
  return found;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const commandLine = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
  } catch {
    return '';
  }
};

async function portOpen(port: number): Promise<boolean> {
  const socket = connect(port, '127.0.0.1');
  try {
    await once(socket, 'connect');
    return true;
  } catch {
    return false;
  } finally {
    socket.destroy();
  }
}

test('ISSUE 15: SIGTERM to the npm process of `npm start` stops the server: no node process left, the port closed', {
  skip,
}, async () => {
  const database = await freshDatabaseUrl('sqlite');
  const port = await freePort();
  const npm = spawn('npm', ['start'], {
    cwd: ROOT,
    // Its own process group, so that whatever happens the cleanup below can reach all of it.
    detached: true,
    env: {
      PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`,
      HOME: process.env.HOME ?? '',
      DATABASE_URL: database.url,
      PORT: String(port),
      LOG_LEVEL: 'info', // the shutdown line is at info
      MAIL_OUTBOX: TEST_OUTBOX,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  npm.stdout.on('data', (d) => {
    output += d;
  });
  npm.stderr.on('data', (d) => {
    output += d;
  });
  const exited = once(npm, 'exit');
  const pid = npm.pid!;
  let started: number[] = [];
  try {
    await waitUntil(
      async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.ok === true,
      30_000,
      `npm start serving /healthz (${output})`,
    );
    started = descendants(pid);
    assert.ok(
      started.some((p) => commandLine(p).includes('bin/server.mjs')),
      `the server runs under npm: ${started.map(commandLine).join(' | ')}`,
    );

    process.kill(pid, 'SIGTERM'); // npm alone, not its process group
    await Promise.race([
      exited,
      new Promise((_, reject) => setTimeout(() => reject(new Error(`npm did not exit: ${output}`)), 15_000)),
    ]);
    const before = started.map(commandLine).join(' | ');
    await waitUntil(() => !started.some(alive), 5_000, `every process npm started gone (${before})`);
    assert.equal(await portOpen(port), false, 'nothing listens on the port');
    assert.match(output, /"signal":"SIGTERM".*shutting down/, 'the server itself was told');
  } finally {
    for (const p of [pid, ...started]) if (alive(p)) process.kill(p, 'SIGKILL');
    await database.drop();
  }
});
