/** Reads all of standard input (a pipe or file): the first line is the password. */
async function readPiped(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').split(/\r?\n/)[0] ?? '';
}

/** Asks on the terminal without echoing what is typed. */
function askHidden(question: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const stdin = process.stdin;
    process.stderr.write(question);
    stdin.setRawMode(true);
    stdin.resume();
    let value = '';
    const onData = (data: Buffer) => {
      for (const char of data.toString('utf8')) {
        if (char === '\r' || char === '\n') {
          done();
          process.stderr.write('\n');
          resolve(value);
          return;
        }
        if (char === '\u0003') {
          done();
          reject(new Error('cancelled'));
          return;
        }
        if (char === '\u007f' || char === '\b') value = [...value].slice(0, -1).join('');
        else value += char;
      }
    };
    const done = () => {
      stdin.off('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
    };
    stdin.on('data', onData);
  });
}

/**
 * A password from standard input when it is piped, or from a hidden prompt (asked twice) on a
 * terminal. Never from the command line, where it would land in shell history and `ps`.
 */
export async function readPassword(): Promise<string> {
  if (!process.stdin.isTTY) return readPiped();
  const first = await askHidden('Password: ');
  const second = await askHidden('Repeat password: ');
  if (first !== second) throw new Error('the passwords do not match');
  return first;
}
