// Admin CLI: `npx usher <command>` (bin/usher.mjs, after the Node version check) or
// `npm run cli -- <command>`. Errors go to stderr with a non-zero exit code: 2 for usage errors,
// with the usage of the command that was meant. Help and usage errors are answered from help.ts
// alone; the commands (commands.ts: settings, database, every feature) load only to run one.
import { commandLine, HELP, UsageError, usageFailure } from './help.ts';

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  let command: string;
  try {
    const line = commandLine(argv);
    if (line.help) {
      console.log(HELP[line.command]);
      return 0;
    }
    command = line.command;
  } catch (error) {
    if (error instanceof UsageError) return usageFailure(error);
    throw error;
  }
  const { runCommand } = await import('./commands.ts');
  return runCommand(command, argv);
}

process.exitCode = await main();
