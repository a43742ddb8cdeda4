import { PassThrough } from 'node:stream';
import { read } from 'read';

/** Ctrl-C or Ctrl-D at a prompt: the command stops, nothing is submitted. */
export class PromptCancelled extends Error {
  constructor(prompt: string) {
    super(`cancelled at the ${prompt}; nothing was changed`);
  }
}

const CTRL_C = 0x03;
const CTRL_D = 0x04;

/**
 * Standard input was piped but held no password: nothing, or an empty first line (what
 * `printf '%s\n' "$PASSWORD"` pipes when the variable is unset). Said as such rather than as the
 * password rules' "at least 8 characters", which sends the operator looking at the wrong thing.
 */
export class NoPasswordRead extends Error {
  constructor() {
    super(
      'no password read: standard input was empty (pipe the password as its first line, or run on a terminal to be asked)',
    );
  }
}

/** Reads all of standard input (a pipe or file): the first line is the password. */
async function readPiped(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const first = Buffer.concat(chunks).toString('utf8').split(/\r?\n/)[0] ?? '';
  if (first === '') throw new NoPasswordRead();
  return first;
}

/**
 * Asks on the terminal, without echoing what is typed when `silent` (a password). `read` (readline underneath) does the line
 * editing, so arrow keys, Home/End and the like move a cursor instead of landing in the password.
 * Its own handling of the two cancelling keys is not enough: readline takes Ctrl-D as "delete
 * forward" unless the line is empty, and on an empty line closes without `read` ever settling.
 * So the keys go through a pass-through that stops the prompt on either byte, wherever it comes.
 */
async function ask(question: string, silent: boolean): Promise<string> {
  const stdin = process.stdin;
  const keys = Object.assign(new PassThrough(), {
    isTTY: true,
    setRawMode: (mode: boolean) => stdin.setRawMode(mode),
  });
  let cancel: (error: Error) => void = () => {};
  const cancelled = new Promise<never>((_, reject) => {
    cancel = reject;
  });
  const onData = (chunk: Buffer) => {
    if (chunk.includes(CTRL_C) || chunk.includes(CTRL_D)) {
      cancel(new PromptCancelled(silent ? 'password prompt' : 'confirmation'));
      // The end of its input closes readline; the `read` promise is left behind, never settled.
      keys.end();
      return;
    }
    keys.write(chunk);
  };
  stdin.on('data', onData);
  // An explicit pause (the end of a previous prompt) is not undone by a new listener.
  stdin.resume();
  try {
    return await Promise.race([
      read({
        prompt: question,
        silent,
        replace: '',
        input: keys,
        output: process.stderr,
        // Even when stderr is redirected: without terminal mode readline leaves raw mode off,
        // and the terminal itself would echo the password.
        terminal: true,
      }),
      cancelled,
    ]);
  } finally {
    // The Enter (or the cancelling key) was not echoed: end the prompt's line ourselves.
    if (silent) process.stderr.write('\n');
    stdin.off('data', onData);
    stdin.setRawMode(false);
    stdin.pause();
  }
}

/**
 * A password from standard input when it is piped, or from a hidden prompt (asked twice) on a
 * terminal. Never from the command line, where it would land in shell history and `ps`.
 */
export async function readPassword(): Promise<string> {
  if (!process.stdin.isTTY) return readPiped();
  const first = await ask('Password:', true);
  const second = await ask('Repeat password:', true);
  if (first !== second) throw new Error('the passwords do not match');
  return first;
}

/** One line typed on the terminal, echoed (a confirmation); Ctrl-C or Ctrl-D cancel as above. */
export function askLine(question: string): Promise<string> {
  return ask(question, false);
}
