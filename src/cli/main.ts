// Admin CLI: `npm run cli -- <command>`, on the same DATABASE_URL (and settings) as the server,
// safe to run while servers run on that database. Errors go to stderr with a non-zero exit code.
import { parseArgs } from 'node:util';
import { type Config, ConfigError, loadConfig } from '../config.ts';
import { type Database, openDatabase } from '../db/database.ts';
import { createServices } from '../services.ts';
import { AppError } from '../shared/errors.ts';
import { checkEmail } from '../users/rules.ts';
import type { User } from '../users/user.ts';
import { importUsers, progressReporter } from './import.ts';
import { readPassword } from './prompt.ts';
import { visible } from './visible.ts';

const HELP: Record<string, string> = {
  '': `Usage: npm run cli -- <command> [options]

Commands:
  users add --email E --name N     register a user (password from stdin or a hidden prompt)
  users list [--json]              list every user
  users import FILE                import users from JSON lines or CSV (email,name,password)
  users set-password --email E     set a new password (stdin or prompt); ends the user's sessions
  users delete --email E           delete a user with their sessions, products and reviews
  users verify --email E           mark a user's email as verified
  mail send-test --to E            send a test message through the configured mail transport
  migrate                          apply pending database migrations

The database and settings come from the same environment variables as the server (DATABASE_URL…).
Run "npm run cli -- <command> --help" for one command.`,
  'users add': `Usage: npm run cli -- users add --email E --name N

Registers a user by the same rules as POST /api/users. The password is read from standard input
when it is piped (first line), or asked twice without echo on a terminal; never from arguments.
  printf '%s\\n' "$PASSWORD" | npm run cli -- users add --email ada@example.com --name Ada`,
  'users list': `Usage: npm run cli -- users list [--json]

Prints every user in id order: a table, or one JSON object per line with --json.`,
  'users import': `Usage: npm run cli -- users import FILE

Imports users from FILE: JSON lines ({"email":…,"name":…,"password":…} per line; .jsonl/.ndjson)
or CSV with a header row naming email, name and password (.csv; RFC 4180: a quoted field may hold
commas, doubled quotes and line breaks). The file is streamed, read twice (once to count rows).
Every row is checked by the registration rules; refused rows are reported with their line numbers;
a CSV with broken quoting is refused whole before anything is imported. Emails that already exist
are skipped, so an interrupted import can simply be run again. Hashes run in parallel up to
HASH_CONCURRENCY. A progress bar is shown on a terminal, plain progress lines otherwise.
Exit code 0 when no row was refused, 1 otherwise.`,
  'users set-password': `Usage: npm run cli -- users set-password --email E

Sets a new password (standard input, or a hidden prompt asked twice) by the registration rules,
and ends every session of that user.`,
  'users verify': `Usage: npm run cli -- users verify --email E

Marks the user's email as verified, as following the link in a verification mail would (for
addresses an operator has confirmed some other way).`,
  'mail send-test': `Usage: npm run cli -- mail send-test --to E

Sends a test message to E through the configured transport (SMTP_URL, or a .eml file in
MAIL_OUTBOX) at once, not through the outbox, and reports what the transport said. Exit code 0
when it was accepted, 1 when it was not.`,
  'users delete': `Usage: npm run cli -- users delete --email E

Deletes the user with that email, with their sessions, products and reviews.`,
  migrate: `Usage: npm run cli -- migrate

Applies pending migrations (servers also do this at start; this is for deploy pipelines).`,
};

class UsageError extends Error {}

function userLine(user: User): string {
  return `${user.id}\t${visible(user.email)}\t${visible(user.name)}\t${user.createdAt.toISOString()}`;
}

async function run(argv: string[], config: Config, database: Database): Promise<number> {
  const words = argv.filter((a) => !a.startsWith('-'));
  const command =
    words[0] === 'users' || words[0] === 'mail' ? `${words[0]} ${words[1] ?? ''}`.trim() : (words[0] ?? '');
  if (argv.includes('--help') || argv.includes('-h') || command === '' || command === 'help') {
    const text = HELP[command === 'help' ? '' : command];
    if (text === undefined) throw new UsageError(`unknown command "${command}"`);
    console.log(text);
    return 0;
  }
  if (HELP[command] === undefined) throw new UsageError(`unknown command "${command}"`);

  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      email: { type: 'string' },
      name: { type: 'string' },
      to: { type: 'string' },
      json: { type: 'boolean' },
    },
  });
  const need = (option: 'email' | 'name' | 'to'): string => {
    const value = values[option];
    if (typeof value !== 'string' || value === '') throw new UsageError(`--${option} is required`);
    return value;
  };

  await database.migrate();
  if (command === 'migrate') {
    console.log('migrations applied');
    return 0;
  }
  const { users, mail } = createServices(config, database);
  switch (command) {
    case 'users add': {
      const email = need('email');
      const name = need('name');
      const user = await users.register({ email, name, password: await readPassword() });
      console.log(`created user ${userLine(user)}`);
      return 0;
    }
    case 'users list': {
      for (let page = 1; ; page++) {
        const { users: batch } = await users.list({
          page,
          size: 100,
          offset: (page - 1) * 100,
          sort: 'id',
          descending: false,
        });
        for (const user of batch) {
          console.log(
            values.json
              ? visible(
                  JSON.stringify({
                    id: String(user.id),
                    email: user.email,
                    name: user.name,
                    createdAt: user.createdAt,
                  }),
                  true,
                )
              : userLine(user),
          );
        }
        if (batch.length < 100) return 0;
      }
    }
    case 'users import': {
      const file = positionals[2];
      if (!file) throw new UsageError('users import needs a FILE');
      const report = await importUsers(
        users,
        file,
        config.passwordHash.concurrency,
        progressReporter(process.stderr),
      );
      for (const r of report.refused) console.error(`line ${r.line}: ${visible(r.reason)}`);
      console.log(
        `imported ${report.imported}, skipped ${report.skipped} (already registered), refused ${report.refused.length}, of ${report.total} rows in ${report.seconds.toFixed(1)} s`,
      );
      return report.refused.length === 0 ? 0 : 1;
    }
    case 'users set-password': {
      const email = need('email');
      const user = await users.setPassword(email, await readPassword());
      console.log(`password changed for user ${user.id}; their sessions are ended`);
      return 0;
    }
    case 'users delete': {
      const user = await users.deleteByEmail(need('email'));
      console.log(`deleted user ${user.id} (${visible(user.email)})`);
      return 0;
    }
    case 'users verify': {
      const user = await users.markEmailVerified(need('email'));
      console.log(`verified the email of user ${user.id} (${visible(user.email)})`);
      return 0;
    }
    case 'mail send-test': {
      const to = checkEmail(need('to'));
      try {
        await mail.sendTest(to);
      } catch (error) {
        console.error(
          `usher: the ${mail.transportKind} transport refused the message: ${visible((error as Error).message)}`,
        );
        return 1;
      } finally {
        mail.close();
      }
      console.log(
        mail.transportKind === 'smtp'
          ? `sent a test message to ${visible(to)} through ${visible(new URL(config.mail.smtpUrl!).host)}`
          : `wrote a test message to ${visible(to)} into ${visible(config.mail.outboxDir)}`,
      );
      return 0;
    }
  }
  throw new UsageError(`unknown command "${command}"`);
}

async function main(): Promise<number> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`usher: configuration error: ${visible(error.message)}`);
      return 2;
    }
    throw error;
  }
  const database = openDatabase(config.databaseUrl, config.database);
  try {
    return await run(process.argv.slice(2), config, database);
  } catch (error) {
    if (error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      console.error(`usher: ${visible((error as Error).message)}\n\n${HELP['']}`);
      return 2;
    }
    if (error instanceof AppError) {
      console.error(`usher: ${error.code}: ${visible(error.message)}`);
      return 1;
    }
    console.error(`usher: ${visible(error instanceof Error ? error.message : String(error))}`);
    return 1;
  } finally {
    await database.close();
  }
}

process.exitCode = await main();
